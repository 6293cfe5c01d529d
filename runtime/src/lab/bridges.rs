//! One simulated host's bridges, made to match the topology (idempotent).
//!
//! Expects the host's ovsdb-server and ovs-vswitchd running (daemons.rs).
//! Guarantees the layout of specs/ovs-pipeline.md §2 (as tests/ovs_fixture.py
//! builds it): br-int (dummy datapath, fail-mode=secure, OpenFlow 1.0–1.5)
//! with `vxlan0` = ofport 1 (flow-based VXLAN), `uplink` = ofport 2, and one
//! dummy port `vm<N>` at ofport N per VM port of the topology — VM ports not
//! in the topology are removed; br-phy holds the host's underlay address, a
//! route and a neighbour entry for every other host, so VXLAN leaves `p0`
//! really encapsulated. Flows are not touched here (the OVS client pushes them).

use super::daemons::{Binaries, HostDir};
use super::topology::{LabHost, BRIDGE, TUNNEL_OFPORT, UPLINK_OFPORT};
use super::LabError;
use std::net::Ipv4Addr;
use std::time::Duration;

/// The next hop for underlay destinations that are not hosts (Muxes, VIPs,
/// multicast groups): the fabric, as the fixture names it.
const GATEWAY: (&str, &str) = ("169.254.0.1", "aa:55:aa:55:00:fe");

/// The underlay MAC of the host at `index` (1-based) in the topology.
pub fn host_mac(index: usize) -> String {
    format!(
        "aa:55:aa:55:{:02x}:{:02x}",
        (index >> 8) & 0xff,
        index & 0xff
    )
}

/// Makes the host's bridges and ports match `host`.
pub fn reconcile(
    bins: &Binaries,
    hd: &HostDir,
    host: &LabHost,
    mac: &str,
    peers: &[(Ipv4Addr, String)],
) -> Result<(), LabError> {
    let vsctl = bins.get("ovs-vsctl");
    let db = format!("--db={}", hd.db_socket());
    let dir = hd.dir.display().to_string();
    let mut base: Vec<String> = vec![db.clone(), "--timeout=20".into()];
    let mut cmd = |parts: &[&str]| {
        base.push("--".into());
        base.extend(parts.iter().map(|s| s.to_string()));
    };
    cmd(&["--may-exist", "add-br", BRIDGE]);
    cmd(&[
        "set",
        "bridge",
        BRIDGE,
        "datapath_type=dummy",
        "fail-mode=secure",
        "protocols=OpenFlow10,OpenFlow13,OpenFlow14,OpenFlow15",
    ]);
    cmd(&["--may-exist", "add-port", BRIDGE, "vxlan0"]);
    let tunnel_port = format!("ofport_request={TUNNEL_OFPORT}");
    cmd(&[
        "set",
        "interface",
        "vxlan0",
        "type=vxlan",
        "options:remote_ip=flow",
        "options:key=flow",
        &tunnel_port,
    ]);
    cmd(&["--may-exist", "add-port", BRIDGE, "uplink"]);
    let uplink_port = format!("ofport_request={UPLINK_OFPORT}");
    let uplink_pcap = format!("options:tx_pcap={dir}/uplink.pcap");
    cmd(&[
        "set",
        "interface",
        "uplink",
        "type=dummy",
        &uplink_port,
        &uplink_pcap,
    ]);
    cmd(&["--may-exist", "add-br", "br-phy"]);
    let hwaddr = format!("other-config:hwaddr={mac}");
    cmd(&["set", "bridge", "br-phy", "datapath_type=dummy", &hwaddr]);
    cmd(&["--may-exist", "add-port", "br-phy", "p0"]);
    let p0_pcap = format!("options:tx_pcap={dir}/p0.pcap");
    cmd(&["set", "interface", "p0", "type=dummy", &p0_pcap]);
    let argv: Vec<&str> = base.iter().map(String::as_str).collect();
    hd.check(vsctl, &argv)?;

    // VM ports: remove the ones the topology no longer has, add the new ones
    let listed = hd.check(vsctl, &[&db, "--timeout=20", "list-ports", BRIDGE])?;
    let have: Vec<&str> = listed.lines().filter(|p| p.starts_with("vm")).collect();
    let want: Vec<String> = host.ports.iter().map(|p| p.iface()).collect();
    let mut change: Vec<String> = vec![db.clone(), "--timeout=20".into()];
    for old in have.iter().filter(|p| !want.iter().any(|w| w == *p)) {
        change.extend(["--", "--if-exists", "del-port", BRIDGE, old].map(String::from));
    }
    for p in &host.ports {
        let name = p.iface();
        if have.contains(&name.as_str()) {
            continue;
        }
        change.extend([
            "--".into(),
            "add-port".into(),
            BRIDGE.into(),
            name.clone(),
            "--".into(),
            "set".into(),
            "interface".into(),
            name.clone(),
            "type=dummy".into(),
            format!("ofport_request={}", p.ofport),
            format!("options:tx_pcap={dir}/{name}.pcap"),
        ]);
    }
    if change.len() > 2 {
        let argv: Vec<&str> = change.iter().map(String::as_str).collect();
        hd.check(vsctl, &argv)?;
    }
    hd.wait_for(&hd.mgmt(BRIDGE), Duration::from_secs(20))?;
    hd.wait_for(&hd.mgmt("br-phy"), Duration::from_secs(20))?;
    underlay(bins, hd, host.underlay_ip, peers)
}

/// Routes and neighbours live in ovs-vswitchd's memory, so they are set on
/// every ensure (a restarted daemon has lost them).
fn underlay(
    bins: &Binaries,
    hd: &HostDir,
    ip: Ipv4Addr,
    peers: &[(Ipv4Addr, String)],
) -> Result<(), LabError> {
    let appctl = bins.get("ovs-appctl");
    let ctl = hd.vswitchd_ctl().display().to_string();
    let t = |args: &[&str]| -> Vec<String> {
        let mut v = vec!["-t".to_string(), ctl.clone(), "--timeout=20".into()];
        v.extend(args.iter().map(|s| s.to_string()));
        v
    };
    let strict = |args: &[&str]| -> Result<(), LabError> {
        let v = t(args);
        let argv: Vec<&str> = v.iter().map(String::as_str).collect();
        hd.check(appctl, &argv).map(|_| ())
    };
    // adding a route that exists fails harmlessly; the table is then already right
    let lenient = |args: &[&str]| -> Result<(), LabError> {
        let v = t(args);
        let argv: Vec<&str> = v.iter().map(String::as_str).collect();
        hd.run(appctl, &argv, super::daemons::TOOL_DEADLINE)
            .map(|_| ())
    };
    strict(&["netdev-dummy/ip4addr", "br-phy", &format!("{ip}/32")])?;
    lenient(&["ovs/route/add", &format!("{}/32", GATEWAY.0), "br-phy"])?;
    for half in ["0.0.0.0/1", "128.0.0.0/1"] {
        lenient(&["ovs/route/add", half, "br-phy", GATEWAY.0])?;
    }
    strict(&["tnl/neigh/set", "br-phy", GATEWAY.0, GATEWAY.1])?;
    for (peer, mac) in peers {
        lenient(&["ovs/route/add", &format!("{peer}/32"), "br-phy"])?;
        strict(&["tnl/neigh/set", "br-phy", &peer.to_string(), mac])?;
    }
    Ok(())
}
