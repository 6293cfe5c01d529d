"""Real Open vSwitch for tests: one ovsdb-server + ovs-vswitchd per simulated host.

Each `OvsHost` runs its own daemons (`ovs-vswitchd --enable-dummy`, userspace
datapath) in a private temp dir (OVS_RUNDIR/OVS_DBDIR/OVS_LOGDIR/
OVS_SYSCONFDIR), so it never touches a system OVS, and stops them by pid.
Layout of one host (specs/ovs-pipeline.md §2):

    br-int (datapath_type=dummy, fail-mode=secure, OpenFlow10..15)
      1  vxlan0  type=vxlan, remote_ip=flow, key=flow   (real VXLAN encap)
      2  uplink  type=dummy, tx_pcap
      N  vm-N    type=dummy, tx_pcap   (one per VM, N = its vm_port)
    br-phy (the underlay NIC): p0 type=dummy, tx_pcap; br-phy holds the
      host's underlay IP, a route to everything, and neighbour entries, so
      VXLAN packets leave p0 really encapsulated and VXLAN packets injected
      into p0 are really decapsulated (tnl_pop) into br-int port 1.

`Fabric` carries frames between hosts: what leaves a host's p0 is injected
into the p0 of the host that owns the outer destination IP. Frames are
injected with `ovs-appctl netdev-dummy/receive` and read back from the
ports' pcap files.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from scapy.all import Ether, raw, rdpcap  # type: ignore[import-untyped]

SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
GATEWAY, GATEWAY_MAC = "192.168.0.1", "aa:55:aa:55:00:fe"  # the fabric, as a next hop
SETTLE = 0.4  # seconds a negative check waits for a packet that must not come


def ensure_ovs() -> None:
    """Fails with a clear message when OVS is not installed (scripts/test.sh installs it)."""
    missing = [b for b in ("ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl", "ovs-appctl", "ovsdb-tool")
               if shutil.which(b) is None and not Path("/usr/sbin", b).exists()]
    if missing or not SCHEMA.exists():
        raise RuntimeError(
            f"Open vSwitch is missing ({', '.join(missing) or SCHEMA}); "
            "install Debian's openvswitch-switch (scripts/test.sh does)")


def _bin(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin") / name)


class OvsHost:
    """One simulated host: its own OVS daemons, br-int and br-phy."""

    def __init__(self, name: str, underlay_ip: str, index: int, root: Path):
        ensure_ovs()
        self.name = name
        self.ip = underlay_ip
        self.mac = f"aa:55:aa:55:00:{index:02x}"
        self.dir = root / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.env = dict(os.environ, OVS_RUNDIR=str(self.dir), OVS_DBDIR=str(self.dir),
                        OVS_LOGDIR=str(self.dir), OVS_SYSCONFDIR=str(self.dir))
        self.db = f"unix:{self.dir}/db.sock"
        self.ctl = str(self.dir / "vswitchd.ctl")
        self.procs: dict[str, subprocess.Popen] = {}
        self.vm_ports: dict[int, str] = {}

    # ------------------------------------------------------------ daemons
    def start(self) -> OvsHost:
        conf = self.dir / "conf.db"
        if not conf.exists():
            subprocess.run([_bin("ovsdb-tool"), "create", str(conf), str(SCHEMA)], check=True, env=self.env)
        self.procs["ovsdb-server"] = subprocess.Popen(
            [_bin("ovsdb-server"), str(conf), f"--remote=p{self.db}", "--no-chdir",
             f"--unixctl={self.dir}/ovsdb.ctl", f"--log-file={self.dir}/ovsdb.log"],
            env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._wait_for(self.dir / "db.sock", "ovsdb-server")
        self.vsctl("--no-wait", "init")
        self.start_vswitchd()
        return self

    def start_vswitchd(self) -> None:
        self.procs["ovs-vswitchd"] = subprocess.Popen(
            [_bin("ovs-vswitchd"), self.db, "--enable-dummy", "--disable-system", "--no-chdir",
             f"--unixctl={self.ctl}", f"--log-file={self.dir}/vswitchd.log"],
            env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._wait_for(Path(self.ctl), "ovs-vswitchd")
        if (self.dir / "br-int.mgmt").exists() or self.vm_ports:
            self._wait_for(self.dir / "br-int.mgmt", "br-int")
            self._underlay()

    def kill_vswitchd(self) -> None:
        """Stops ovs-vswitchd abruptly (SIGKILL, by pid): a crash."""
        p = self.procs.pop("ovs-vswitchd", None)
        if p is not None:
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=10)
        for s in (Path(self.ctl), self.dir / "br-int.mgmt", self.dir / "br-phy.mgmt"):
            s.unlink(missing_ok=True)

    def stop(self) -> None:
        for name in ("ovs-vswitchd", "ovsdb-server"):
            p = self.procs.pop(name, None)
            if p is None:
                continue
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)

    def _wait_for(self, path: Path, what: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not path.exists():
            for name, p in self.procs.items():
                if p.poll() is not None:
                    log = (self.dir / ("vswitchd.log" if "vswitchd" in name else "ovsdb.log"))
                    tail = log.read_text()[-2000:] if log.exists() else ""
                    raise RuntimeError(f"{self.name}: {name} exited ({p.returncode}):\n{tail}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: {what} did not create {path} within {timeout}s")
            time.sleep(0.02)

    # ------------------------------------------------------------ tools
    def vsctl(self, *args: str) -> str:
        r = subprocess.run([_bin("ovs-vsctl"), f"--db={self.db}", "--timeout=20", *args],
                           capture_output=True, text=True, env=self.env)
        if r.returncode != 0:
            raise RuntimeError(f"{self.name}: ovs-vsctl {' '.join(args)}: {r.stderr}")
        return r.stdout

    def appctl(self, *args: str, check: bool = True) -> str:
        r = subprocess.run([_bin("ovs-appctl"), "-t", self.ctl, "--timeout=20", *args],
                           capture_output=True, text=True, env=self.env)
        if check and r.returncode != 0:
            raise RuntimeError(f"{self.name}: ovs-appctl {args[0]}: {r.stderr}")
        return r.stdout

    def ofctl(self, *args: str, bridge: str = "br-int") -> str:
        target = f"unix:{self.dir}/{bridge}.mgmt"
        r = subprocess.run([_bin("ovs-ofctl"), "-O", "OpenFlow15", args[0], target, *args[1:]],
                           capture_output=True, text=True, env=self.env, timeout=120)
        if r.returncode != 0:
            raise RuntimeError(f"{self.name}: ovs-ofctl {args[0]}: {r.stderr}")
        return r.stdout

    @property
    def bridge(self) -> str:
        """The switch argument netc's client takes."""
        return f"unix:{self.dir}/br-int.mgmt"

    # ------------------------------------------------------------ topology
    def build(self, vm_ports: list[int], neighbours: dict[str, str]) -> OvsHost:
        """Creates br-int with its VM ports and br-phy; `neighbours` maps
        underlay IPs (other hosts, VIPs, groups) to MACs."""
        self.vm_ports = {p: f"vm{p}" for p in sorted(vm_ports)}
        self.neighbours = dict(neighbours)
        cmd = ["--", "add-br", "br-int", "--", "set", "bridge", "br-int", "datapath_type=dummy",
               "fail-mode=secure", "protocols=OpenFlow10,OpenFlow13,OpenFlow14,OpenFlow15",
               "--", "add-port", "br-int", "vxlan0", "--", "set", "interface", "vxlan0", "type=vxlan",
               "options:remote_ip=flow", "options:key=flow", "ofport_request=1",
               "--", "add-port", "br-int", "uplink", "--", "set", "interface", "uplink", "type=dummy",
               "ofport_request=2", f"options:tx_pcap={self.dir}/uplink.pcap",
               "--", "add-br", "br-phy", "--", "set", "bridge", "br-phy", "datapath_type=dummy",
               f"other-config:hwaddr={self.mac}",
               "--", "add-port", "br-phy", "p0", "--", "set", "interface", "p0", "type=dummy",
               f"options:tx_pcap={self.dir}/p0.pcap"]
        for port, name in self.vm_ports.items():
            cmd += ["--", "add-port", "br-int", name, "--", "set", "interface", name, "type=dummy",
                    f"ofport_request={port}", f"options:tx_pcap={self.dir}/{name}.pcap"]
        self.vsctl(*cmd)
        self._wait_for(self.dir / "br-int.mgmt", "br-int")
        self._underlay()
        return self

    def _underlay(self) -> None:
        self._wait_for(self.dir / "br-phy.mgmt", "br-phy")
        self.appctl("netdev-dummy/ip4addr", "br-phy", f"{self.ip}/16")
        # the /16 is on-link; everything else (VIPs, groups) via the fabric's gateway
        self.appctl("ovs/route/add", "192.168.0.0/16", "br-phy")
        for half in ("0.0.0.0/1", "128.0.0.0/1"):
            self.appctl("ovs/route/add", half, "br-phy", GATEWAY)
        self.appctl("tnl/neigh/set", "br-phy", GATEWAY, GATEWAY_MAC)
        for ip, mac in self.neighbours.items():
            self.appctl("tnl/neigh/set", "br-phy", ip, mac)

    # ------------------------------------------------------------ packets
    def pcap(self, port: str) -> Path:
        return self.dir / f"{port}.pcap"

    def sent(self, port: str) -> list:
        p = self.pcap(port)
        return list(rdpcap(str(p))) if p.exists() and p.stat().st_size > 24 else []

    def inject(self, port: str, frame) -> None:
        self.appctl("netdev-dummy/receive", port, raw(frame).hex())

    def trace(self, port: str, frame) -> str:
        return self.appctl("ofproto/trace", "br-int", f"in_port={port}", raw(frame).hex())

    def ports(self) -> list[str]:
        return ["uplink", "p0", *self.vm_ports.values()]


def _pcap_frames(path: Path) -> int:
    """Frames in a pcap file, by walking the record headers (no decoding:
    polling with Scapy's rdpcap re-dissects every frame of every port)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0
    n, off = 0, 24
    while off + 16 <= len(data):
        incl = int.from_bytes(data[off + 8:off + 12], "little")
        if off + 16 + incl > len(data):
            break  # a record still being written
        n += 1
        off += 16 + incl
    return n


class Fabric:
    """A set of hosts and the underlay between them."""

    def __init__(self, hosts: dict[str, tuple[str, list[int]]], extra_neighbours: dict[str, str] | None = None):
        self.root = Path(tempfile.mkdtemp(prefix="netc-ovs-"))
        self.hosts: dict[str, OvsHost] = {}
        for i, (name, (ip, _)) in enumerate(sorted(hosts.items()), start=1):
            self.hosts[name] = OvsHost(name, ip, i, self.root)
        neighbours = {h.ip: h.mac for h in self.hosts.values()}
        neighbours.update(extra_neighbours or {})
        try:
            for name, (_, ports) in hosts.items():
                h = self.hosts[name]
                h.start()
                h.build(ports, {ip: mac for ip, mac in neighbours.items() if ip != h.ip})
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for h in self.hosts.values():
            h.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def by_ip(self, ip: str) -> OvsHost | None:
        return next((h for h in self.hosts.values() if h.ip == ip), None)

    def counts(self) -> dict[tuple[str, str], int]:
        return {(h.name, p): _pcap_frames(h.pcap(p)) for h in self.hosts.values() for p in h.ports()}

    def send(self, host: str, port: str, frame, expect: int | None = None, timeout: float = 3.0) -> dict:
        """Injects `frame` at host/port and returns {(host, port): [new frames]}
        for every port of every host, after waiting until `expect` new frames
        appeared (or SETTLE seconds when expect is None / 0)."""
        before = self.counts()
        self.hosts[host].inject(port, frame)
        return self._collect(before, expect, timeout)

    def _collect(self, before: dict, expect: int | None, timeout: float) -> dict:
        deadline = time.monotonic() + (timeout if expect else SETTLE)
        while True:
            now = self.counts()
            n = sum(now[k] - before[k] for k in now)
            if (expect and n >= expect) or time.monotonic() > deadline:
                break
            time.sleep(0.03)
        if expect:
            time.sleep(0.1)  # let any extra copy show up too
        out = {}
        for (h, p), c in self.counts().items():
            if c > before[(h, p)]:
                out[(h, p)] = self.hosts[h].sent(p)[before[(h, p)]:]
        return out

    def carry(self, frames: dict) -> dict:
        """Plays the underlay for frames that left some host's p0: each VXLAN
        frame is injected into the p0 of the host owning its outer destination.
        Returns what then leaves every port."""
        before = self.counts()
        n = 0
        for (h, p), lst in frames.items():
            if p != "p0":
                continue
            for f in lst:
                dst = self.by_ip(f["IP"].dst) if f.haslayer("IP") else None
                if dst is not None:
                    dst.inject("p0", Ether(raw(f)))
                    n += 1
        return self._collect(before, None, 0) if n else {}
