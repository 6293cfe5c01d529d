"""A P4Runtime gRPC server stand-in, for testing the client's PROTOCOL handling.

What it does: arbitration (the highest election id per device is primary,
others are told ALREADY_EXISTS), SetForwardingPipelineConfig (stores the
P4Info and the device config, any bytes), GetForwardingPipelineConfig (reads
them back; FAILED_PRECONDITION before one is set), Write (per-update validation against the P4Info and the stored
entities, CONTINUE_ON_ERROR semantics, per-update `p4.v1.Error`s in the
`grpc-status-details-bin` trailer as P4Runtime spec §12.3 says), and Read
(wildcard reads of table entries, members and multicast groups).

What it does NOT do: forward packets, model any P4 table's behaviour, or
stand in for BMv2/Tofino. It exists because p4c/BMv2 are not installable
here; only the P4Runtime protocol is exercised against it. `reject` lets a
test make the "switch" refuse chosen updates (e.g. a table that is full).
"""

from __future__ import annotations

import threading
from concurrent import futures

import grpc
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from .p4info import Index, index
from .validate import check_write_request, entity_key

U = p4runtime_pb2.Update


class StandIn(p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self, device_id: int = 1):
        self.device_id = device_id
        self.lock = threading.Lock()
        self.primary = None  # (high, low)
        self.index: Index | None = None
        self.config = None  # the ForwardingPipelineConfig set
        self.store: dict = {}  # entity key -> Entity
        self.reject = None  # callable(update) -> (code, message) | None
        self.writes = 0  # Write RPCs seen
        self.pipelines_set = 0  # SetForwardingPipelineConfig RPCs accepted

    # ------------------------------------------------------------ arbitration
    def StreamChannel(self, request_iterator, context):
        for req in request_iterator:
            if req.WhichOneof("update") != "arbitration":
                continue
            a = req.arbitration
            eid = (a.election_id.high, a.election_id.low)
            resp = p4runtime_pb2.StreamMessageResponse()
            resp.arbitration.device_id = a.device_id
            with self.lock:
                if a.device_id != self.device_id:
                    resp.arbitration.status.code = code_pb2.NOT_FOUND
                    resp.arbitration.status.message = f"no device {a.device_id}"
                    yield resp
                    continue
                if self.primary is None or eid >= self.primary:
                    self.primary = eid
                p = self.primary
            resp.arbitration.election_id.high, resp.arbitration.election_id.low = p
            resp.arbitration.status.code = code_pb2.OK if eid == p else code_pb2.ALREADY_EXISTS
            yield resp

    def _check_primary(self, device_id, election_id, context):
        if device_id != self.device_id:
            context.abort(grpc.StatusCode.NOT_FOUND, f"no device {device_id}")
        if self.primary is None or (election_id.high, election_id.low) != self.primary:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, "not the primary controller")

    # ------------------------------------------------------------ pipeline
    def SetForwardingPipelineConfig(self, request, context):
        with self.lock:
            self._check_primary(request.device_id, request.election_id, context)
            if not request.config.p4info.tables:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "empty P4Info")
            self.index = index(request.config.p4info)
            self.config = p4runtime_pb2.ForwardingPipelineConfig()
            self.config.CopyFrom(request.config)
            self.store = {}
            self.pipelines_set += 1
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request, context):
        if request.device_id != self.device_id:
            context.abort(grpc.StatusCode.NOT_FOUND, f"no device {request.device_id}")
        with self.lock:
            config = self.config
        if config is None:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "no forwarding pipeline config set")
        resp = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        resp.config.p4info.CopyFrom(config.p4info)
        resp.config.cookie.CopyFrom(config.cookie)
        if request.response_type == p4runtime_pb2.GetForwardingPipelineConfigRequest.ALL:
            resp.config.p4_device_config = config.p4_device_config
        return resp

    # ------------------------------------------------------------ write
    def Write(self, request, context):
        with self.lock:
            self.writes += 1
            self._check_primary(request.device_id, request.election_id, context)
            if self.index is None:
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, "no forwarding pipeline config set")
            errors = []
            for u in request.updates:
                errors.append(self._apply_one(u))
            if all(e.canonical_code == code_pb2.OK for e in errors):
                return p4runtime_pb2.WriteResponse()
            st = status_pb2.Status(code=code_pb2.UNKNOWN, message="some updates failed")
            for e in errors:
                st.details.add().Pack(e)
        context.set_trailing_metadata((("grpc-status-details-bin", st.SerializeToString()),))
        context.abort(grpc.StatusCode.UNKNOWN, "some updates failed")

    def _apply_one(self, u) -> p4runtime_pb2.Error:
        key = entity_key(u.entity)
        if self.reject:
            r = self.reject(u)
            if r:
                return p4runtime_pb2.Error(canonical_code=r[0], message=r[1])
        exists = key in self.store
        if u.type == U.INSERT and exists:
            return p4runtime_pb2.Error(canonical_code=code_pb2.ALREADY_EXISTS, message="entry exists")
        default = u.entity.WhichOneof("entity") == "table_entry" and u.entity.table_entry.is_default_action
        if u.type in (U.MODIFY, U.DELETE) and not exists and not default:
            return p4runtime_pb2.Error(canonical_code=code_pb2.NOT_FOUND, message="no such entry")
        one = p4runtime_pb2.WriteRequest()
        one.updates.add().CopyFrom(u)
        problems = check_write_request(one, self.index, existing=[k for k in self.store if k != key])
        if problems:
            return p4runtime_pb2.Error(canonical_code=code_pb2.INVALID_ARGUMENT, message="; ".join(problems))
        if u.type == U.DELETE:
            del self.store[key]
        elif default and not u.entity.table_entry.action.WhichOneof("type"):
            self.store.pop(key, None)  # reset to the program's default
        else:
            self.store[key] = u.entity
        return p4runtime_pb2.Error(canonical_code=code_pb2.OK)

    # ------------------------------------------------------------ read
    def Read(self, request, context):
        if request.device_id != self.device_id:
            context.abort(grpc.StatusCode.NOT_FOUND, f"no device {request.device_id}")
        with self.lock:
            stored = list(self.store.values())
        resp = p4runtime_pb2.ReadResponse()
        for want in request.entities:
            kind = want.WhichOneof("entity")
            for e in stored:
                if e.WhichOneof("entity") != kind:
                    continue
                if kind == "table_entry":
                    w, te = want.table_entry, e.table_entry
                    if w.table_id and w.table_id != te.table_id:
                        continue
                    if w.is_default_action != te.is_default_action:
                        continue
                resp.entities.add().CopyFrom(e)
        yield resp


def serve(device_id: int = 1) -> tuple[grpc.Server, int, StandIn]:
    """Starts a stand-in on 127.0.0.1 (a free port); returns (server, port, servicer)."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    svc = StandIn(device_id)
    p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(svc, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port, svc
