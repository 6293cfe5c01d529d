//! One simulated host's bridges, made to match the topology (idempotent).
//!
//! Expects the host's ovsdb-server and ovs-vswitchd running (daemons.rs).
//! Guarantees the layout of specs/ovs-pipeline.md §2 (as tests/ovs_fixture.py
//! builds it): br-int (dummy datapath, fail-mode=secure, OpenFlow 1.0–1.5)
//! with `vxlan0` = ofport 1 (flow-based VXLAN), `uplink` = ofport 2, and one
//! dummy port `vm<N>` at ofport N per VM port of the topology — VM ports not
//! in the topology are removed; br-phy holds the host's underlay address in
//! an on-link subnet covering every host ([`Underlay`]), a neighbour entry
//! for every other host and a default route through the fabric's gateway, so
//! VXLAN leaves `p0` really encapsulated (OVS's userspace tunnel routing
//! needs a route whose source address is on br-phy: a /32 alone routes
//! nothing). Flows are not touched here (the OVS client pushes them).

use super::daemons::{Binaries, HostDir};
use super::topology::{LabHost, BRIDGE, TUNNEL_OFPORT, UPLINK_OFPORT};
use super::LabError;
use std::net::Ipv4Addr;
use std::time::Duration;

/// The MAC of the next hop for underlay destinations that are not hosts
/// (Muxes, VIPs, multicast groups): the fabric, as the fixture names it.
const GATEWAY_MAC: &str = "aa:55:aa:55:00:fe";

/// The lab's underlay: one on-link subnet holding every host and the
/// fabric's gateway (tests/ovs_fixture.py's layout, sized to the intent).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Underlay {
    pub network: Ipv4Addr,
    pub plen: u8,
    /// An address of the subnet that no host has.
    pub gateway: Ipv4Addr,
}

impl Underlay {
    /// The smallest subnet (at most a /24) covering `hosts` that still has
    /// a free address for the gateway (the lowest one).
    pub fn covering(hosts: &[Ipv4Addr]) -> Underlay {
        let first = hosts.first().map_or(0, |a| u32::from(*a));
        let mut plen: u8 = hosts
            .iter()
            .map(|a| (u32::from(*a) ^ first).leading_zeros().min(32) as u8)
            .min()
            .unwrap_or(32)
            .min(24);
        loop {
            let mask = if plen == 0 {
                0
            } else {
                u32::MAX << (32 - plen)
            };
            let network = first & mask;
            let size = 1u64 << (32 - plen);
            // not the network or broadcast address, not a host's
            let free = (1..size.saturating_sub(1))
                .map(|k| network.wrapping_add(k as u32))
                .find(|a| !hosts.iter().any(|h| u32::from(*h) == *a));
            if let Some(gw) = free {
                return Underlay {
                    network: Ipv4Addr::from(network),
                    plen,
                    gateway: Ipv4Addr::from(gw),
                };
            }
            plen -= 1;
        }
    }
}

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
    net: &Underlay,
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
    underlay(bins, hd, host.underlay_ip, net, peers)
}

/// Routes and neighbours live in ovs-vswitchd's memory, so they are set on
/// every ensure (a restarted daemon has lost them).
fn underlay(
    bins: &Binaries,
    hd: &HostDir,
    ip: Ipv4Addr,
    net: &Underlay,
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
    // a reused daemon already has the routes: delete (failing when absent is
    // fine), then add strictly — a failed add is a real error
    let replace_route = |args: &[&str]| -> Result<(), LabError> {
        let v = t(&["ovs/route/del", args[0]]);
        let argv: Vec<&str> = v.iter().map(String::as_str).collect();
        hd.run(appctl, &argv, super::daemons::TOOL_DEADLINE)?;
        let mut add = vec!["ovs/route/add"];
        add.extend(args);
        strict(&add)
    };
    let subnet = format!("{}/{}", net.network, net.plen);
    strict(&[
        "netdev-dummy/ip4addr",
        "br-phy",
        &format!("{ip}/{}", net.plen),
    ])?;
    replace_route(&[&subnet, "br-phy"])?;
    let gateway = net.gateway.to_string();
    for half in ["0.0.0.0/1", "128.0.0.0/1"] {
        replace_route(&[half, "br-phy", &gateway])?;
    }
    strict(&["tnl/neigh/set", "br-phy", &gateway, GATEWAY_MAC])?;
    for (peer, mac) in peers {
        strict(&["tnl/neigh/set", "br-phy", &peer.to_string(), mac])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Underlay;
    use std::net::Ipv4Addr;

    #[test]
    fn the_underlay_covers_every_host_and_a_free_gateway() {
        let hosts: Vec<Ipv4Addr> = (11..=14).map(|d| Ipv4Addr::new(192, 168, 0, d)).collect();
        let u = Underlay::covering(&hosts);
        assert_eq!((u.network, u.plen), (Ipv4Addr::new(192, 168, 0, 0), 24));
        assert_eq!(u.gateway, Ipv4Addr::new(192, 168, 0, 1));
        let spread = [Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 3, 0, 1)];
        let u = Underlay::covering(&spread);
        assert_eq!((u.network, u.plen), (Ipv4Addr::new(10, 0, 0, 0), 14));
        assert_eq!(u.gateway, Ipv4Addr::new(10, 0, 0, 2));
        // a full /30: the gateway needs a wider subnet
        let full = [Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2)];
        let u = Underlay::covering(&full);
        assert!(u.plen <= 24 && !full.contains(&u.gateway));
    }
}
