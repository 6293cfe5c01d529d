//! The lab's topology: which simulated hosts exist and what is plugged in.
//!
//! Expects an engine that evaluated intent with the standard rules (the
//! `host`, `tenant`, `vm`, `vm_port`, `smux` and `agent_mux_*` relations of
//! `rules/schema.ndl` and `rules/lb_duet.ndl`). Guarantees: one [`LabHost`]
//! per `host` fact (sorted by name), one [`LabPort`] per `vm_port` fact whose
//! VM exists, and the software Muxes' VIP vectors, so that `netc trace` can
//! follow a packet from `topology.json` and the bridges alone — without the
//! store or the intent.

use crate::engine::Engine;
use crate::store::IntentFact;
use netc_compiler::plan::Plan;
use netc_compiler::value::{Row, Value};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// OpenFlow port of the flow-based VXLAN port on every br-int (specs/ovs-pipeline.md §2).
pub const TUNNEL_OFPORT: u16 = 1;
/// OpenFlow port of the non-overlay uplink (DSR replies, SNAT).
pub const UPLINK_OFPORT: u16 = 2;
/// The integration bridge every host's flows are pushed to.
pub const BRIDGE: &str = "br-int";

/// Everything the lab simulates.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    pub hosts: Vec<LabHost>,
    /// The software Muxes' VIPs, so a traced packet to a VIP can be followed
    /// the way the Mux forwards it (`vector[hash5 % n]`).
    #[serde(default)]
    pub mux_vips: Vec<MuxVip>,
}

/// One simulated host: its own ovsdb-server and ovs-vswitchd, bridge br-int.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabHost {
    pub name: String,
    /// The host's VXLAN endpoint (`host` fact), configured on br-phy.
    pub underlay_ip: Ipv4Addr,
    /// VM ports, by ofport.
    pub ports: Vec<LabPort>,
}

/// A VM's port on br-int: the ofport the flows use, and who sits behind it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabPort {
    pub ofport: u16,
    pub tenant: String,
    pub vm: String,
    pub vni: u32,
    pub ip: Ipv4Addr,
    /// `aa:bb:cc:dd:ee:ff`.
    pub mac: String,
}

impl LabPort {
    /// The dummy interface's name (its pcap is `<name>.pcap` in the host's dir).
    pub fn iface(&self) -> String {
        format!("vm{}", self.ofport)
    }
}

/// One VIP as a software Mux balances it for packets arriving with `vni`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MuxVip {
    pub mux: String,
    pub mux_ip: Ipv4Addr,
    pub vni: u32,
    pub vip: Ipv4Addr,
    pub proto: u8,
    pub port: u16,
    /// Indexed by `hash5 % members.len()`.
    pub members: Vec<MuxMember>,
}

/// Where the Mux sends a packet for one slot of a VIP's vector.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MuxMember {
    pub idx: u32,
    pub vni: u32,
    pub dip: Ipv4Addr,
    pub underlay: Ipv4Addr,
    pub dmac: String,
}

impl Topology {
    /// Reads the topology from evaluated intent.
    pub fn from_engine(plan: &Plan, engine: &Engine) -> Topology {
        Topology::from_rows(&|name: &str| -> Vec<Row> {
            plan.relation_id(name)
                .map(|r| engine.contents(r))
                .unwrap_or_default()
        })
    }

    fn from_rows(rows: &dyn Fn(&str) -> Vec<Row>) -> Topology {
        let vni_of: BTreeMap<String, u32> = rows("tenant")
            .iter()
            .filter_map(|r| Some((sym(r, 0)?, num(r, 1)? as u32)))
            .collect();
        // (tenant, vm) -> (mac, ip)
        let vms: BTreeMap<(String, String), (u64, Ipv4Addr)> = rows("vm")
            .iter()
            .filter_map(|r| Some(((sym(r, 0)?, sym(r, 1)?), (mac(r, 2)?, ip(r, 3)?))))
            .collect();
        let mut ports: BTreeMap<String, Vec<LabPort>> = BTreeMap::new();
        for r in rows("vm_port") {
            let (Some(host), Some(tenant), Some(vm), Some(ofport)) =
                (sym(&r, 0), sym(&r, 1), sym(&r, 2), num(&r, 3))
            else {
                continue;
            };
            let Some(&(m, addr)) = vms.get(&(tenant.clone(), vm.clone())) else {
                continue;
            };
            ports.entry(host).or_default().push(LabPort {
                ofport: ofport as u16,
                vni: vni_of.get(&tenant).copied().unwrap_or(0),
                tenant,
                vm,
                ip: addr,
                mac: mac_text(m),
            });
        }
        let mut hosts: Vec<LabHost> = rows("host")
            .iter()
            .filter_map(|r| {
                let name = sym(r, 0)?;
                let mut ports = ports.get(&name).cloned().unwrap_or_default();
                ports.sort_by_key(|p| p.ofport);
                ports.dedup_by_key(|p| p.ofport);
                Some(LabHost {
                    underlay_ip: ip(r, 1)?,
                    ports,
                    name,
                })
            })
            .collect();
        hosts.sort_by(|a, b| a.name.cmp(&b.name));
        hosts.dedup_by(|a, b| a.name == b.name);
        Topology {
            hosts,
            mux_vips: mux_vips(rows),
        }
    }

    /// Reads the topology from a stored generation (its intent facts and
    /// relation files), as [`Topology::from_engine`] reads evaluated intent:
    /// what `netc rollback` restores the lab to.
    pub fn from_generation(facts: &[IntentFact], relations: &[(String, String)]) -> Topology {
        let mut by: BTreeMap<&str, Vec<Row>> = BTreeMap::new();
        for f in facts {
            by.entry(f.relation.as_str())
                .or_default()
                .push(f.row.split('\t').map(value_of).collect());
        }
        for (name, text) in relations {
            let rows = by.entry(name.as_str()).or_default();
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                rows.push(line.split('\t').map(value_of).collect());
            }
        }
        Topology::from_rows(&|name: &str| by.get(name).cloned().unwrap_or_default())
    }

    pub fn host(&self, name: &str) -> Option<&LabHost> {
        self.hosts.iter().find(|h| h.name == name)
    }

    pub fn host_by_ip(&self, ip: Ipv4Addr) -> Option<&LabHost> {
        self.hosts.iter().find(|h| h.underlay_ip == ip)
    }
}

fn mux_vips(rows: &dyn Fn(&str) -> Vec<Row>) -> Vec<MuxVip> {
    let mux_ip: BTreeMap<String, Ipv4Addr> = rows("smux")
        .iter()
        .filter_map(|r| Some((sym(r, 0)?, ip(r, 1)?)))
        .collect();
    // (mux, member vni, member) -> (underlay, dmac)
    let tunnels: BTreeMap<(String, u32, Ipv4Addr), (Ipv4Addr, String)> = rows("agent_mux_tunnel")
        .iter()
        .filter_map(|r| {
            let key = (sym(r, 0)?, num(r, 1)? as u32, ip(r, 2)?);
            Some((key, (ip(r, 3)?, mac_text(mac(r, 4)?))))
        })
        .collect();
    let members = rows("agent_mux_member");
    let mut out = Vec::new();
    for r in rows("agent_mux_vip") {
        let (Some(mux), Some(vni), Some(vip), Some(proto), Some(port)) =
            (sym(&r, 0), num(&r, 1), ip(&r, 2), num(&r, 3), num(&r, 4))
        else {
            continue;
        };
        let mut ms: Vec<MuxMember> = members
            .iter()
            .filter(|m| {
                sym(m, 0).as_deref() == Some(&mux)
                    && ip(m, 1) == Some(vip)
                    && num(m, 2) == Some(proto)
                    && num(m, 3) == Some(port)
            })
            .filter_map(|m| {
                let (idx, mvni, dip) = (num(m, 4)? as u32, num(m, 5)? as u32, ip(m, 6)?);
                let (underlay, dmac) = tunnels.get(&(mux.clone(), mvni, dip))?.clone();
                Some(MuxMember {
                    idx,
                    vni: mvni,
                    dip,
                    underlay,
                    dmac,
                })
            })
            .collect();
        ms.sort_by_key(|m| m.idx);
        out.push(MuxVip {
            mux_ip: mux_ip.get(&mux).copied().unwrap_or(Ipv4Addr::UNSPECIFIED),
            mux,
            vni: vni as u32,
            vip,
            proto: proto as u8,
            port: port as u16,
            members: ms,
        });
    }
    out
}

/// A stored value's text as the value it was: number, IPv4 address, MAC,
/// else a symbol (the types the topology reads).
fn value_of(t: &str) -> Value {
    if let Ok(n) = t.parse::<i64>() {
        return Value::Number(n);
    }
    if let Ok(a) = t.parse::<Ipv4Addr>() {
        return Value::Ipv4(u32::from(a));
    }
    let bytes: Vec<&str> = t.split(':').collect();
    if bytes.len() == 6 && bytes.iter().all(|b| b.len() == 2) {
        if let Ok(m) = u64::from_str_radix(&bytes.concat(), 16) {
            return Value::Mac(m);
        }
    }
    Value::sym(t)
}

fn sym(r: &Row, i: usize) -> Option<String> {
    match r.get(i)? {
        Value::Symbol(s) => Some(s.as_str().to_string()),
        _ => None,
    }
}

fn num(r: &Row, i: usize) -> Option<i64> {
    match r.get(i)? {
        Value::Number(n) => Some(*n),
        Value::Unsigned(n) => i64::try_from(*n).ok(),
        _ => None,
    }
}

fn ip(r: &Row, i: usize) -> Option<Ipv4Addr> {
    match r.get(i)? {
        Value::Ipv4(a) => Some(Ipv4Addr::from(*a)),
        _ => None,
    }
}

fn mac(r: &Row, i: usize) -> Option<u64> {
    match r.get(i)? {
        Value::Mac(m) => Some(*m),
        _ => None,
    }
}

pub fn mac_text(m: u64) -> String {
    let b = m.to_be_bytes();
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        b[2], b[3], b[4], b[5], b[6], b[7]
    )
}
