//! The placement's input model, and reading it from the engine's relations.
//!
//! Expects the relations of specs/intent.md §5: `placement_need`,
//! `placement_switch`, `placement_link`, `placement_member_tor`,
//! `placement_tip` (derived by rules/lb_duet.ndl) and the inputs
//! `placement_traffic`, `placement_previous`, `placement_params`.
//! Guarantees: a [`Model`] groups everything by VIP ([`VipSpec`], with its
//! TIPs), so that "one VIP changed" is one value; iteration orders are fixed
//! (switches by name, endpoints by address). Bad values that no `error_*`
//! rule reports (negative traffic, two `placement_params` rows, a VIP on two
//! previous switches, a TIP of two VIPs) are a [`PlacementError`] naming the
//! relation, column and value; values that an `error_*` rule reports
//! (`error_placement_params`) make [`read`] place nothing, so that the
//! finding is what the user sees.

use super::PlacementError;
use crate::engine::Engine;
use netc_compiler::value::{Row, Sym, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

/// An endpoint: a VIP or a TIP address.
pub type Endpoint = Ipv4Addr;

/// Table entries, in the order host, ECMP, tunnel.
pub type Tables = [i64; 3];

/// The names of the three tables, in [`Tables`] order.
pub const TABLE_NAMES: [&str; 3] = ["host", "ecmp", "tunnel"];

/// What an endpoint needs: table entries on its switch, and where its DIP
/// slots live (ToR -> slots).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointSpec {
    pub need: Tables,
    pub members: BTreeMap<Sym, i64>,
}

/// A VIP with everything the placement knows about it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VipSpec {
    pub endpoint: EndpointSpec,
    /// Mbps entering the fabric per source switch.
    pub traffic: BTreeMap<Sym, i64>,
    /// The TIPs of a two-level VIP (empty otherwise).
    pub tips: BTreeMap<Endpoint, EndpointSpec>,
}

impl VipSpec {
    /// Σ Mbps over the sources: the greedy's sort key.
    pub fn total_traffic(&self) -> i64 {
        self.traffic.values().sum()
    }
}

/// Switches (free table capacity), directed links (Mbps, before headroom)
/// and the route budget.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fabric {
    pub switches: BTreeMap<Sym, Tables>,
    /// Rows with the same `(a, b)` are summed (parallel links).
    pub links: BTreeMap<(Sym, Sym), i64>,
    /// How many endpoints the switches may hold in all: every placed
    /// endpoint's /32 takes an underlay entry on every switch, so this is
    /// the least `placement_route_free` over the switches (`None`: the
    /// rules have no such relation, no bound).
    pub routes_free: Option<i64>,
}

/// `placement_params`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Fraction of a link's capacity the placement may use (Duet: 0.8).
    pub link_headroom: f64,
    /// Sticky threshold: move only when the MRU gain exceeds it (Duet: 0.05).
    pub delta: f64,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            link_headroom: 0.8,
            delta: 0.05,
        }
    }
}

/// Everything the greedy reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Model {
    pub fabric: Fabric,
    pub vips: BTreeMap<Endpoint, VipSpec>,
    pub params: Params,
}

/// A model read from an engine, with the placement currently applied.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Inputs {
    pub model: Model,
    /// `placement_previous`: endpoint -> switch.
    pub previous: BTreeMap<Endpoint, Sym>,
}

/// The relations the built-in reads. `placement_route_free` may be absent
/// (rules that predate it: no route budget); the others may not.
pub const READS: [&str; 9] = [
    "placement_need",
    "placement_switch",
    "placement_link",
    "placement_member_tor",
    "placement_tip",
    "placement_traffic",
    "placement_previous",
    "placement_params",
    "placement_route_free",
];

/// The least `free` of the `placement_route_free` rows (`None` without rows).
pub fn routes_free(rows: &[Row]) -> Option<i64> {
    rows.iter().map(|r| num(&r[1])).min()
}

/// The rows of the per-endpoint relations, by endpoint (their column 0),
/// and the TIPs: what a [`VipSpec`] is assembled from ([`ByEndpoint::vip_spec`]),
/// for every VIP by [`read`], for the VIPs a commit touched by
/// `follow.rs`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct ByEndpoint {
    /// `placement_need` rows.
    pub need: BTreeMap<Endpoint, BTreeSet<Row>>,
    /// `placement_member_tor` rows.
    pub members: BTreeMap<Endpoint, BTreeSet<Row>>,
    /// `placement_traffic` rows, by VIP.
    pub traffic: BTreeMap<Endpoint, BTreeSet<Row>>,
    /// `placement_tip`: TIP -> its VIP, and VIP -> its TIPs.
    pub tip_of: BTreeMap<Endpoint, Endpoint>,
    pub tips: BTreeMap<Endpoint, BTreeSet<Endpoint>>,
}

impl ByEndpoint {
    /// Adds `placement_tip` rows. A TIP met with a second VIP stops it:
    /// `(tip, vip, the other vip)` is returned ([`read`] reports it).
    pub(super) fn add_tips(&mut self, tip: &[Row]) -> Option<(Endpoint, Endpoint, Endpoint)> {
        for row in tip {
            let (t, v) = (addr(&row[0]), addr(&row[1]));
            if let Some(other) = self.tip_of.insert(t, v) {
                return Some((t, v, other));
            }
            self.tips.entry(v).or_default().insert(t);
        }
        None
    }

    /// Adds the rows of `placement_need`, `placement_member_tor` and
    /// `placement_traffic`, grouped by their column 0.
    pub(super) fn add_rows(&mut self, need: Vec<Row>, members: Vec<Row>, traffic: Vec<Row>) {
        for (rows, into) in [
            (need, &mut self.need),
            (members, &mut self.members),
            (traffic, &mut self.traffic),
        ] {
            for row in rows {
                into.entry(addr(&row[0])).or_default().insert(row);
            }
        }
    }

    /// An endpoint's need (its greatest `placement_need` row: one per
    /// endpoint from the standard rules) and member ToRs; `None` without a
    /// need row.
    fn endpoint_spec(&self, ep: Endpoint) -> Option<EndpointSpec> {
        let need = self.need.get(&ep)?.last()?;
        let members = self
            .members
            .get(&ep)
            .into_iter()
            .flatten()
            .map(|row| (sym(&row[1]), num(&row[2])))
            .collect();
        Some(EndpointSpec {
            need: [num(&need[1]), num(&need[2]), num(&need[3])],
            members,
        })
    }

    /// The spec of VIP `v`: `None` when `v` has no need row or is a TIP.
    pub fn vip_spec(&self, v: Endpoint) -> Option<VipSpec> {
        if self.tip_of.contains_key(&v) {
            return None;
        }
        let endpoint = self.endpoint_spec(v)?;
        let tips = self
            .tips
            .get(&v)
            .into_iter()
            .flatten()
            .filter_map(|t| Some((*t, self.endpoint_spec(*t)?)))
            .collect();
        let mut traffic = BTreeMap::new();
        for row in self.traffic.get(&v).into_iter().flatten() {
            *traffic.entry(sym(&row[1])).or_insert(0) += num(&row[2]);
        }
        Some(VipSpec {
            endpoint,
            traffic,
            tips,
        })
    }
}

/// Reads the model from the engine's current contents. `Ok(None)` when the
/// program lacks one of the relations (rules without lb_duet.ndl) or when
/// `placement_params` is out of range (`error_placement_params` reports it).
pub fn read(engine: &Engine) -> Result<Option<Inputs>, PlacementError> {
    let plan = engine.plan();
    let get = |name: &str| plan.relation_id(name).map(|r| engine.contents(r));
    let (Some(need), Some(switch), Some(link), Some(member_tor)) = (
        get("placement_need"),
        get("placement_switch"),
        get("placement_link"),
        get("placement_member_tor"),
    ) else {
        return Ok(None);
    };
    let (Some(tip), Some(traffic), Some(previous), Some(params)) = (
        get("placement_tip"),
        get("placement_traffic"),
        get("placement_previous"),
        get("placement_params"),
    ) else {
        return Ok(None);
    };
    let bad =
        |relation: &str, column: &str, value: String, expected: String| PlacementError::BadValue {
            relation: relation.to_string(),
            column: column.to_string(),
            value,
            expected,
        };

    let params = match params.as_slice() {
        [] => Params::default(),
        [row] => {
            let p = Params {
                link_headroom: float(&row[0]),
                delta: float(&row[1]),
            };
            if !(p.link_headroom > 0.0 && p.link_headroom <= 1.0 && p.delta >= 0.0) {
                return Ok(None);
            }
            p
        }
        [a, b, ..] => {
            return Err(bad(
                "placement_params",
                "link_headroom",
                format!("{}, {}", b[0], b[1]),
                format!(
                    "a single placement_params row (there is also {}, {})",
                    a[0], a[1]
                ),
            ))
        }
    };

    let mut fabric = Fabric {
        routes_free: get("placement_route_free").and_then(|rows| routes_free(&rows)),
        ..Fabric::default()
    };
    for row in &switch {
        fabric
            .switches
            .insert(sym(&row[0]), [num(&row[1]), num(&row[2]), num(&row[3])]);
    }
    for row in &link {
        *fabric
            .links
            .entry((sym(&row[0]), sym(&row[1])))
            .or_insert(0) += num(&row[2]);
    }

    let mut index = ByEndpoint::default();
    if let Some((t, v, other)) = index.add_tips(&tip) {
        return Err(bad(
            "placement_tip",
            "vip",
            v.to_string(),
            format!("one VIP per TIP ({t} is also a TIP of {other}); check duet_tip_range"),
        ));
    }
    for row in &traffic {
        let mbps = num(&row[2]);
        if mbps < 0 {
            return Err(bad(
                "placement_traffic",
                "mbps",
                mbps.to_string(),
                format!(
                    "a non-negative rate in Mbps (VIP {}, source {})",
                    row[0], row[1]
                ),
            ));
        }
    }
    index.add_rows(need, member_tor, traffic);
    let vips: BTreeMap<Endpoint, VipSpec> = index
        .need
        .keys()
        .filter_map(|ep| Some((*ep, index.vip_spec(*ep)?)))
        .collect();

    let mut prev: BTreeMap<Endpoint, Sym> = BTreeMap::new();
    for row in &previous {
        let (ep, sw) = (addr(&row[0]), sym(&row[1]));
        if let Some(other) = prev.insert(ep, sw) {
            return Err(bad(
                "placement_previous",
                "switch",
                sw.as_str().to_string(),
                format!("one switch per VIP ({ep} is also on {})", other.as_str()),
            ));
        }
    }
    Ok(Some(Inputs {
        model: Model {
            fabric,
            vips,
            params,
        },
        previous: prev,
    }))
}

// The plan's types guarantee these shapes (the engine validates every row
// against its relation's column types); a different shape reads as zero.
fn num(v: &Value) -> i64 {
    match v {
        Value::Number(n) => *n,
        Value::Unsigned(n) => i64::try_from(*n).unwrap_or(i64::MAX),
        _ => 0,
    }
}

fn float(v: &Value) -> f64 {
    match v {
        Value::Float(f) => f.0,
        Value::Number(n) => *n as f64,
        _ => f64::NAN,
    }
}

fn sym(v: &Value) -> Sym {
    match v {
        Value::Symbol(s) => *s,
        other => Sym::new(&other.to_string()),
    }
}

pub(super) fn addr(v: &Value) -> Endpoint {
    match v {
        Value::Ipv4(a) => Ipv4Addr::from(*a),
        _ => Ipv4Addr::UNSPECIFIED,
    }
}
