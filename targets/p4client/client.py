"""P4Runtime client for one switch: arbitration, pipeline, batched writes
with per-update errors, reconciliation by Read, and all-or-nothing apply.

Uses grpcio and the official `p4.v1.p4runtime_pb2[_grpc]` classes.

- `connect()` opens the StreamChannel and sends a MasterArbitrationUpdate
  with the client's election id; it waits for the answer and raises
  `NotPrimary` unless the switch names this client primary.
- `set_pipeline(p4info, device_config)` sends SetForwardingPipelineConfig
  (VERIFY_AND_COMMIT); `get_pipeline()` reads the switch's P4Info back
  (GetForwardingPipelineConfig, None when it has none);
  `ensure_pipeline(p4info, device_config)` sets it when absent, keeps it
  when equal, and raises `ForeignPipeline` (nothing written) when the
  switch runs another program (`pipeline_state` is that check alone).
- `write(updates)` sends updates in their phases (members/groups, entries,
  removals; a server may reorder updates inside one batch), at most
  `batch_size` per WriteRequest; a failed batch raises `WriteFailed` listing
  every failed update with its table/entry and P4Runtime error.
- `diff(desired, check_pipeline)` is the dry run of `apply
  --ensure-pipeline`: the updates it would send (and the pipeline it would
  set), described, nothing written (drift for `netc status`).
- `read_all()` reads every table entry, member and multicast group.
- `apply(desired)` reconciles: reads what the switch holds, computes the
  difference to the desired full state (a netc `p4/<switch>.txtpb`), checks
  it against the P4Info, writes it; if any batch fails, it reads the switch
  again and writes it back to the state read before, then raises
  `WriteFailed` naming every rejected update (nothing is half-applied; if
  even the restore fails, the error says so).
"""

from __future__ import annotations

import queue

import grpc
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from .p4info import Index
from .validate import check_write_request, entity_key

U = p4runtime_pb2.Update


class P4ClientError(Exception):
    pass


class NotPrimary(P4ClientError):
    pass


class ForeignPipeline(P4ClientError):
    pass


class WriteFailed(P4ClientError):
    def __init__(self, switch: str, failures: list[str], rolled_back: bool | None = None):
        self.switch, self.failures, self.rolled_back = switch, failures, rolled_back
        tail = ""
        if rolled_back is True:
            tail = "\n  the updates already applied were undone; the switch is as before"
        elif rolled_back is False:
            tail = "\n  ROLLBACK FAILED: the switch may be partly updated; reconcile it (apply again)"
        super().__init__(f"switch `{switch}` rejected {len(failures)} update(s):\n  " + "\n  ".join(failures) + tail)


def describe(u: p4runtime_pb2.Update, ix: Index) -> str:
    """An update as `TYPE table `name` match {...}`, for error messages."""
    e = u.entity
    kind = e.WhichOneof("entity")
    t = U.Type.Name(u.type)
    if kind == "table_entry":
        te = e.table_entry
        name = ix.tables[te.table_id].preamble.name if te.table_id in ix.tables else f"id {te.table_id}"
        fields = ix.fields(te.table_id) if te.table_id in ix.tables else {}
        parts = []
        for m in te.match:
            f = fields.get(m.field_id)
            which = m.WhichOneof("field_match_type")
            v = getattr(m, which)
            val = getattr(v, "value", getattr(v, "low", b""))
            parts.append(f"{f.name if f else m.field_id}={int.from_bytes(val, 'big'):#x}")
        what = "default entry" if te.is_default_action else "entry {" + ", ".join(parts) + "}"
        return f"{t} table `{name}` {what}"
    if kind == "action_profile_member":
        m = e.action_profile_member
        name = ix.profiles[m.action_profile_id].preamble.name if m.action_profile_id in ix.profiles else m.action_profile_id
        return f"{t} action profile `{name}` member {m.member_id}"
    if kind == "packet_replication_engine_entry":
        return f"{t} multicast group {e.packet_replication_engine_entry.multicast_group_entry.multicast_group_id}"
    return f"{t} {kind}"


def phase(u: p4runtime_pb2.Update) -> int:
    if u.entity.WhichOneof("entity") == "table_entry":
        return 1
    return 2 if u.type == U.DELETE else 0


class P4RuntimeClient:
    def __init__(self, address: str, device_id: int, ix: Index, switch: str = "", election_id=(0, 1),
                 batch_size: int = 1000, timeout: float = 10.0):
        self.address, self.device_id, self.ix = address, device_id, ix
        self.switch = switch or address
        self.election_id = election_id
        self.batch_size, self.timeout = batch_size, timeout
        self.channel = None
        self._out: queue.Queue = queue.Queue()
        self._stream = None

    # ------------------------------------------------------------ session
    def connect(self) -> None:
        # per-update errors of a large batch travel in one trailer; gRPC's
        # default 16 KiB metadata limit would turn them into a bare RESOURCE_EXHAUSTED
        self.channel = grpc.insecure_channel(self.address, options=[("grpc.max_metadata_size", 64 << 20)])
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)

        def requests():
            while True:
                m = self._out.get()
                if m is None:
                    return
                yield m

        self._stream = self.stub.StreamChannel(requests())
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.high, req.arbitration.election_id.low = self.election_id
        self._out.put(req)
        try:
            for resp in self._stream:
                if resp.WhichOneof("update") == "arbitration":
                    st = resp.arbitration.status
                    if st.code != code_pb2.OK:
                        raise NotPrimary(
                            f"switch `{self.switch}`: not primary for device {self.device_id} "
                            f"(election id {self.election_id}; the switch says {code_pb2.Code.Name(st.code)}: {st.message})"
                        )
                    return
        except grpc.RpcError as e:
            raise P4ClientError(f"switch `{self.switch}` ({self.address}): stream failed: {e.code().name}: {e.details()}") from e
        raise P4ClientError(f"switch `{self.switch}`: stream closed before arbitration")

    def close(self) -> None:
        self._out.put(None)
        if self.channel is not None:
            self.channel.close()

    def __enter__(self):
        self.connect()
        return self

    def __exit__(self, *exc):
        self.close()

    def _eid(self, msg):
        msg.election_id.high, msg.election_id.low = self.election_id

    def set_pipeline(self, p4info, device_config: bytes = b"") -> None:
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=self.device_id)
        self._eid(req)
        req.action = p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        try:
            self.stub.SetForwardingPipelineConfig(req, timeout=self.timeout)
        except grpc.RpcError as e:
            raise P4ClientError(f"switch `{self.switch}`: SetForwardingPipelineConfig failed: {e.code().name}: {e.details()}") from e

    def get_pipeline(self):
        """The P4Info the switch runs, or None when no pipeline is set."""
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE,
        )
        try:
            resp = self.stub.GetForwardingPipelineConfig(req, timeout=self.timeout)
        except grpc.RpcError as e:
            if e.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND):
                return None  # the spec's answer for "no pipeline yet"
            raise P4ClientError(f"switch `{self.switch}`: GetForwardingPipelineConfig failed: {e.code().name}: {e.details()}") from e
        if not resp.config.HasField("p4info") or not resp.config.p4info.tables:
            return None
        return resp.config.p4info

    def ensure_pipeline(self, p4info, device_config=b"") -> str:
        """Sets the pipeline when the switch has none; returns "set" or "kept".

        A switch running another P4Info is refused (ForeignPipeline): netc
        does not replace a program it did not install, because that would
        wipe every entry of it; nothing is written. `device_config` is the
        bytes, or a callable giving them, called only when the pipeline is
        set (a missing program file matters only then).
        """
        if self.pipeline_state(p4info) == "kept":
            return "kept"
        self.set_pipeline(p4info, device_config() if callable(device_config) else device_config)
        return "set"

    def pipeline_state(self, p4info) -> str:
        """"absent" (the switch has no pipeline) or "kept" (it runs `p4info`);
        raises ForeignPipeline when it runs another P4Info. Writes nothing."""
        have = self.get_pipeline()
        if have is None:
            return "absent"
        if have.SerializeToString(deterministic=True) == p4info.SerializeToString(deterministic=True):
            return "kept"
        mine = {t.preamble.name for t in p4info.tables}
        theirs = {t.preamble.name for t in have.tables}
        what = []
        if theirs - mine:
            what.append("tables netc.p4 lacks: " + ", ".join(sorted(theirs - mine)[:5]))
        if mine - theirs:
            what.append("missing netc.p4 tables: " + ", ".join(sorted(mine - theirs)[:5]))
        if not what:
            what.append("same table names, different ids, fields or actions")
        raise ForeignPipeline(
            f"switch `{self.switch}` ({self.address}, device {self.device_id}) runs another P4 program "
            f"({'; '.join(what)}); nothing written. Load netc.p4 on it (p4/README.md) or fix the inventory"
        )

    # ------------------------------------------------------------ write
    def _write_batch(self, updates: list) -> list[tuple[int | None, str]]:
        """Sends one batch; returns (update index or None for all, message) per failure."""
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id)
        self._eid(req)
        req.atomicity = p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR
        req.updates.extend(updates)
        try:
            self.stub.Write(req, timeout=self.timeout)
            return []
        except grpc.RpcError as e:
            details = dict(e.trailing_metadata() or ()).get("grpc-status-details-bin")
            if not details:
                return [(None, f"whole batch: {e.code().name}: {e.details()}")]
            st = status_pb2.Status.FromString(details)
            out = []
            for i, (u, d) in enumerate(zip(updates, st.details)):
                err = p4runtime_pb2.Error()
                d.Unpack(err)
                if err.canonical_code != code_pb2.OK:
                    out.append((i, f"{describe(u, self.ix)}: {code_pb2.Code.Name(err.canonical_code)}: {err.message}"))
            return out or [(None, f"whole batch: {e.code().name}: {e.details()}")]

    def write(self, updates) -> int:
        """Writes updates phase by phase; raises WriteFailed at the first failed batch. Returns batches sent."""
        sent = 0
        for ph in (0, 1, 2):
            mine = [u for u in updates if phase(u) == ph]
            for i in range(0, len(mine), self.batch_size):
                failures = self._write_batch(mine[i : i + self.batch_size])
                sent += 1
                if failures:
                    raise WriteFailed(self.switch, [m for _, m in failures])
        return sent

    # ------------------------------------------------------------ read
    def read_all(self, default_tables=()) -> list:
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        req.entities.add().table_entry.table_id = 0
        req.entities.add().action_profile_member.action_profile_id = 0
        req.entities.add().packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 0
        for t in default_tables:
            e = req.entities.add().table_entry
            e.table_id, e.is_default_action = t, True
        out = []
        try:
            for resp in self.stub.Read(req, timeout=self.timeout):
                out.extend(resp.entities)
        except grpc.RpcError as e:
            raise P4ClientError(f"switch `{self.switch}`: Read failed: {e.code().name}: {e.details()}") from e
        return out

    # ------------------------------------------------------------ reconcile
    def plan(self, desired: p4runtime_pb2.WriteRequest, default_tables=(), reset_defaults=False) -> tuple[list, list]:
        """(updates that make the switch hold `desired`, the entities it holds now).

        Default entries are read for the tables whose default `desired` sets
        (and `default_tables`); with `reset_defaults`, a default the switch
        holds that `desired` does not set is reset to the program's default.
        """
        want = {entity_key(u.entity): u.entity for u in desired.updates if u.type != U.DELETE}
        defaults = {e.table_entry.table_id for e in want.values()
                    if e.WhichOneof("entity") == "table_entry" and e.table_entry.is_default_action}
        current = self.read_all(sorted(defaults | set(default_tables)))
        have = {entity_key(e): e for e in current}
        fwd = []

        def upd(t, e):
            u = p4runtime_pb2.Update(type=t)
            u.entity.CopyFrom(e)
            return u

        def is_default(e):
            return e.WhichOneof("entity") == "table_entry" and e.table_entry.is_default_action

        for k, e in want.items():
            if k not in have:
                fwd.append(upd(U.MODIFY if is_default(e) else U.INSERT, e))
            elif have[k].SerializeToString(deterministic=True) != e.SerializeToString(deterministic=True):
                fwd.append(upd(U.MODIFY, e))
        for k, e in have.items():
            if k in want:
                continue
            if is_default(e):
                if reset_defaults:
                    reset = p4runtime_pb2.Entity()
                    reset.table_entry.table_id, reset.table_entry.is_default_action = e.table_entry.table_id, True
                    fwd.append(upd(U.MODIFY, reset))
                continue
            fwd.append(upd(U.DELETE, e))
        fwd.sort(key=phase)
        return fwd, current

    def diff(self, desired: p4runtime_pb2.WriteRequest, check_pipeline: bool = False) -> list[str]:
        """What `apply` would change, one described update each; writes nothing.

        With `check_pipeline`, a switch without a pipeline adds a first line
        (`apply --ensure-pipeline` would set it) and one running another
        P4Info raises ForeignPipeline: its entries are not netc's to compare.
        """
        head = []
        if check_pipeline and self.pipeline_state(self.ix.info) == "absent":
            head.append("SET forwarding pipeline netc.p4 (the switch has none)")
        fwd, _ = self.plan(desired)
        return head + [describe(u, self.ix) for u in fwd]

    def apply(self, desired: p4runtime_pb2.WriteRequest) -> int:
        """Makes the switch hold exactly `desired`; all or nothing. Returns the number of updates sent.

        On a rejected batch the switch is read again and brought back to the
        state read before (so an update a batch applied before failing, even
        one the error did not account for, is undone too).
        """
        problems = check_write_request(desired, self.ix)
        if problems:
            raise WriteFailed(self.switch, [f"(not sent) {p}" for p in problems])
        fwd, before = self.plan(desired)
        defaults = [e.table_entry.table_id for e in (u.entity for u in desired.updates)
                    if e.WhichOneof("entity") == "table_entry" and e.table_entry.is_default_action]
        for ph in (0, 1, 2):
            mine = [u for u in fwd if phase(u) == ph]
            for i in range(0, len(mine), self.batch_size):
                failures = self._write_batch(mine[i : i + self.batch_size])
                if failures:
                    msgs = [m for _, m in failures]
                    raise WriteFailed(self.switch, msgs, rolled_back=self._restore(before, defaults))
        return len(fwd)

    def _restore(self, entities: list, default_tables: list) -> bool:
        snapshot = p4runtime_pb2.WriteRequest()
        for e in entities:
            snapshot.updates.add(type=U.INSERT).entity.CopyFrom(e)
        try:
            undo, _ = self.plan(snapshot, default_tables, reset_defaults=True)
            self.write(undo)
            return True
        except P4ClientError:
            return False
