//! netc's verifier: isolation and affinity proven on what will be pushed.
//!
//! What the user has: an artifact directory (`netc compile … --out DIR`) —
//! the OVS flows and groups, the P4 and Mux tables, the agent rows, exactly
//! as they will be pushed — and, usually, the intent it came from. What
//! happens, in reading order:
//! 1. [`artifacts`] loads DIR (the `.flows`/`.groups` text when the OVS
//!    target rendered it, else the `ovs_flow` rows: the same text);
//! 2. [`policy`] states what must hold: tenants, VMs, vnets, ACLs, groups,
//!    capacities — from the intent's facts (independent of the rules and
//!    renderers: translation validation) or, without intent, from the rows
//!    the host agents receive;
//! 3. [`space`] (header spaces as BDDs, biodivine-lib-bdd), [`ofctl`] (the
//!    text → matches/actions), [`bridge`] (OVS tables) and [`network`]
//!    (underlay, Muxes) model the data plane;
//! 4. [`checks`] traces every packet every VM can send and checks ISO-1/2/3,
//!    REACH-1 and ACL-1 on the outcomes; [`tables`] checks AFF-1, AFF-2,
//!    AFF-4 and CAP-1 on the tables; [`nf`] checks AFF-3 on the NF taps'
//!    paths and groups; [`push`] checks PUSH-1 (each bridge loads its
//!    artifacts, and no two of its flows leave OVS's choice undefined);
//! 5. each violation becomes a [`report::Counterexample`]: a concrete
//!    packet ([`packet`]: frame + pcap), its paths hop by hop with the flow
//!    or entry matched at each hop (`file:line`), and the rules and intent
//!    facts behind them (through a [`Provenance`] the caller supplies).
//!
//! With a previous generation (`--against`), [`tables`] also checks AFF-2
//! and [`plan`] PLAN-1: Duet moves via the SMuxes, Anolis first common
//! nodes, and every intermediate state of the rollout order of a VM move
//! (hairpin first; `netc apply` follows the same order).
//!
//! [`incremental`] keeps a verified generation ([`incremental::Verifier`])
//! and re-checks, after a change, only the VMs whose traces read what
//! changed (`checks::check_vm` records each VM's footprint); its report
//! equals a full verification's. [`kept`] is how it keeps each VM's result
//! between updates: packed, its sets sharing one node table.
//!
//! [`lb`] is the load-balancer model a trace reads (Muxes, HMux tables,
//! black holes), with row ids that survive an update.
//!
//! [`predict`] runs one concrete packet through the same model (`netc
//! predict`), hop by hop; tests compare it with OVS's `ofproto/trace`.
//!
//! The invariants are defined in `specs/invariants.md`. Architecture
//! invariant: `verify/` reads artifacts, never the engine.

pub mod artifacts;
pub mod p4;
pub mod bridge;
pub mod checks;
pub mod dirty;
pub mod host_docs;
pub mod hostlb;
pub mod incremental;
pub mod kept;
pub mod lb;
mod lookup_cache;
pub mod network;
pub mod nf;
pub mod ofctl;
pub mod packet;
pub mod plan;
pub mod policy;
pub mod predict;
pub mod probes;
pub mod push;
mod readers;
pub mod report;
pub mod row_moves;
pub mod space;
pub mod table_recheck;
pub mod tables;
pub mod vm_index;

/// Test helper: `old` with each `(at, Some(x))` inserted at `at` and each
/// `(at, None)` removing the item at `at` (positions past the end insert at
/// the end or remove nothing), in order — the edits proptests apply to rows.
#[cfg(test)]
pub(crate) fn edited<T: Clone>(old: &[T], edits: Vec<(usize, Option<T>)>) -> Vec<T> {
    let mut new = old.to_vec();
    for (at, item) in edits {
        let at = at.min(new.len());
        match item {
            Some(x) => new.insert(at, x),
            None if at < new.len() => {
                new.remove(at);
            }
            None => {}
        }
    }
    new
}

use artifacts::{Artifacts, FlowText, Row};
use bridge::{End, Hop, Outcome};
use network::{ModelError, Network};
use policy::Policy;
use report::{Counterexample, Packet, PathCx, Report, Stats, Status, Verdict};
use std::collections::{BTreeMap, BTreeSet};

/// Maps artifact rows back to the rules and intent facts that produced them.
pub trait Provenance {
    /// Rules and facts behind an OVS flow of `device`.
    fn flow(&self, device: &str, flow: &FlowText) -> Vec<String>;
    /// Rules and facts behind a row of a located relation.
    fn row(&self, relation: &str, row: &Row) -> Vec<String>;
}

/// No provenance (artifacts alone): counterexamples cite artifact rows only.
pub struct NoProvenance;
impl Provenance for NoProvenance {
    fn flow(&self, _: &str, _: &FlowText) -> Vec<String> {
        Vec::new()
    }
    fn row(&self, _: &str, _: &Row) -> Vec<String> {
        Vec::new()
    }
}

pub struct Input<'a> {
    pub artifacts: &'a Artifacts,
    pub policy: &'a Policy,
    /// A previous generation's artifacts (AFF-2).
    pub against: Option<&'a Artifacts>,
    pub provenance: &'a dyn Provenance,
    /// Counterexamples kept per invariant (violations are all counted).
    pub limit: usize,
    /// Violations accepted for this change (`--accept`).
    pub accept: &'a [report::Waiver],
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum VerifyError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Kept(#[from] kept::Corrupt),
    /// The switch checks could not read a switch the artifacts hold.
    #[error(transparent)]
    Switch(#[from] artifacts::ArtifactError),
}

const ORDER: [&str; 15] = [
    "PUSH-1", "ISO-1", "ISO-2", "ISO-3", "REACH-1", "REACH-2", "ACL-1", "ACL-2", "AFF-1", "AFF-2",
    "AFF-3", "AFF-4", "CAP-1", "ROUTE-1", "PLAN-1",
];

/// Verifies one artifact set.
pub fn verify(input: &Input) -> Result<Report, VerifyError> {
    let t0 = std::time::Instant::now();
    // phases and cache sizes on stderr, for runs too long to wait for blind
    let diagnose = std::env::var_os("NETC_VERIFY_CACHE_SIZES").is_some();
    let mut phases = BTreeMap::new();
    let mut lap = {
        let mut last = t0;
        move |phase: &'static str| {
            let now = std::time::Instant::now();
            phases.insert(phase, (now - last).as_millis());
            if diagnose {
                eprintln!("phase {phase}: {} ms", (now - last).as_millis());
            }
            last = now;
            phases.clone()
        }
    };
    let net = Network::build(input.artifacts, input.policy)?;
    lap("model");
    let res = checks::run(&net, input.policy, input.limit);
    lap("paths");
    if diagnose {
        cache_sizes(&net);
    }
    let found = TableFindings::check(&net, input);
    lap("tables");
    let mut report = assemble(&net, input, &res, found, t0)?;
    report.stats.phases = lap("report");
    Ok(report)
}

/// Prints (stderr) the bridges whose lookup caches are largest: a
/// diagnostic for where a full verification's memory goes.
pub fn cache_sizes(net: &Network) {
    let mut sizes: Vec<(usize, usize, usize, &str)> = net
        .bridges
        .iter()
        .map(|b| {
            let (keys, listed, nodes) = b.cache_size();
            (nodes, keys, listed, b.name.as_str())
        })
        .collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    let total: usize = sizes.iter().map(|s| s.0).sum();
    eprintln!(
        "lookup caches: {total} BDD nodes in all (largest bridges: nodes, lookups, flows listed)"
    );
    for (nodes, keys, listed, name) in sizes.iter().take(12) {
        eprintln!("  {name}: {nodes} nodes, {keys} lookups, {listed} flows listed");
    }
}

/// What the checks on tables (not on paths) found, uncapped.
#[derive(Clone, Default)]
pub struct TableFindings {
    /// PUSH-1 on the bridges (the switches' share comes with their checks).
    pub push1: Vec<Counterexample>,
    pub aff1: Vec<Counterexample>,
    pub aff3: Vec<Counterexample>,
    pub aff4: Vec<Counterexample>,
    pub cap1: Vec<Counterexample>,
    /// AFF-2 against the previous generation: counterexamples and notes.
    pub aff2: Option<(Vec<Counterexample>, Vec<String>)>,
    /// PLAN-1 against the previous generation.
    pub plan1: Option<plan::Findings>,
}

impl TableFindings {
    pub fn check(net: &Network, input: &Input) -> TableFindings {
        TableFindings {
            push1: push::push1(net, input.artifacts)
                .into_values()
                .flatten()
                .collect(),
            aff1: {
                let mut aff1 = tables::aff1(input.artifacts, input.policy);
                aff1.extend(probes::check(input.artifacts, input.policy));
                aff1.extend(hostlb::aff1(net, input.artifacts, input.policy));
                aff1
            },
            aff3: nf::aff3(net, input.artifacts, input.policy, input.limit),
            aff4: tables::aff4(input.artifacts, input.policy),
            cap1: tables::cap1(input.artifacts, input.policy),
            aff2: input.against.map(|old| tables::aff2(old, input.artifacts)),
            plan1: input
                .against
                .map(|old| plan::check(old, input.artifacts, input.policy, input.limit)),
        }
    }
}

/// The report: the path results, the table checks, a verdict per invariant.
pub(crate) fn assemble(
    net: &Network,
    input: &Input,
    res: &checks::PathResults,
    tf: TableFindings,
    t0: std::time::Instant,
) -> Result<Report, VerifyError> {
    let mut found: BTreeMap<&str, Vec<Counterexample>> = BTreeMap::new();
    for v in &res.violations {
        found
            .entry(v.invariant)
            .or_default()
            .push(path_cx(net, input, v));
    }
    let mut counts: BTreeMap<&str, usize> = res.counts.clone();
    // what a waiver accepts is counted apart (and shown), never as violated
    let mut accepted: BTreeMap<&str, Vec<Counterexample>> = BTreeMap::new();
    let mut accepted_n: BTreeMap<&str, usize> = BTreeMap::new();
    let mut per_waiver = vec![0usize; input.accept.len()];
    let mut table = |inv: &'static str, cxs: Vec<Counterexample>| {
        let (waived, kept): (Vec<_>, Vec<_>) =
            cxs.into_iter()
                .partition(|c| match input.accept.iter().position(|w| w.covers(c)) {
                    Some(i) => {
                        per_waiver[i] += 1;
                        true
                    }
                    None => false,
                });
        *accepted_n.entry(inv).or_default() += waived.len();
        accepted
            .entry(inv)
            .or_default()
            .extend(waived.into_iter().take(input.limit));
        *counts.entry(inv).or_default() += kept.len();
        found
            .entry(inv)
            .or_default()
            .extend(kept.into_iter().take(input.limit));
    };
    let mut push1 = tf.push1;
    cite_flows(input, &mut push1);
    table("PUSH-1", push1);
    table("AFF-1", tf.aff1);
    table("AFF-3", tf.aff3);
    table("AFF-4", tf.aff4);
    table("CAP-1", tf.cap1);
    // the P4 switches' own tables, on their symbolic ingress (p4/invariants.rs)
    let mut switch_cxs: BTreeMap<&'static str, Vec<Counterexample>> = BTreeMap::new();
    let switches = p4::invariants::check(input.artifacts, input.policy)?;
    let switch_detail = format!(
        "{} switch{} checked symbolically ({} ingress classes)",
        switches.switches,
        if switches.switches == 1 { "" } else { "es" },
        switches.outcomes,
    );
    for cx in switches.counterexamples {
        if let Some(inv) = ORDER.iter().find(|i| **i == cx.invariant) {
            switch_cxs.entry(inv).or_default().push(cx);
        }
    }
    for (inv, cxs) in switch_cxs {
        table(inv, cxs);
    }
    let mut notes = Vec::new();
    if let Some((cxs, lines)) = tf.aff2 {
        notes.extend(lines);
        table("AFF-2", cxs);
    }
    let plan1 = tf.plan1.as_ref().map(|p| p.detail.clone());
    if let Some(p) = tf.plan1 {
        table("PLAN-1", p.counterexamples);
    }
    cite_intent(input, &mut found);
    let intent = input.policy.from_intent;
    let n_switches = switches.switches;
    let n_vms = input.policy.vms.len();
    let mut verdicts = Vec::new();
    for inv in ORDER {
        let mut cxs = found.remove(inv).unwrap_or_default();
        let n = counts.get(inv).copied().unwrap_or(0);
        let waived = accepted_n.get(inv).copied().unwrap_or(0);
        // why the invariant was not (wholly) checked: it needs an input it
        // was not given, or the artifacts hold nothing it reads
        let skip: Option<String> = match inv {
            "REACH-1" | "REACH-2" | "ACL-1" | "ACL-2" | "CAP-1" | "ROUTE-1" if !intent => {
                Some("needs the intent (pass the intent files)".into())
            }
            "AFF-2" | "PLAN-1" if input.against.is_none() => {
                Some("needs a previous generation (--against DIR)".into())
            }
            "ACL-2" | "ROUTE-1" | "REACH-2" if n_switches == 0 => {
                Some("no P4 switches in the artifacts: nothing to check".into())
            }
            "AFF-3" if !nf::has_taps(net) => {
                Some("no NF chain taps in the artifacts: nothing to check".into())
            }
            "ISO-1" | "ISO-2" if n_switches > 0 && !intent => Some(format!(
                "{} traced; the {n_switches} P4 switches' checks need the intent (pass the intent files)",
                if n_vms == 0 { "no VMs".to_string() } else { format!("every packet of {n_vms} VMs") }
            )),
            "PUSH-1" if net.bridges.is_empty() && n_switches == 0 => {
                Some("no OVS bridges and no P4 switches in the artifacts: nothing to check".into())
            }
            "ISO-1" | "ISO-2" | "ISO-3" | "REACH-1" | "ACL-1" if n_vms == 0 && n_switches == 0 => {
                Some("no VMs and no P4 switches in the artifacts: nothing to check".into())
            }
            _ => None,
        };
        let (status, detail) = if n > 0 {
            (
                Status::Violated,
                format!("{n} violation{}", if n == 1 { "" } else { "s" }),
            )
        } else if waived > 0 {
            cxs = accepted.remove(inv).unwrap_or_default();
            let by: Vec<String> = input
                .accept
                .iter()
                .filter(|w| w.invariant == inv)
                .map(|w| format!("{} by {}: {}", w.name(), w.actor, w.reason))
                .collect();
            (
                Status::Accepted,
                format!(
                    "{waived} violation{} accepted for this change ({})",
                    if waived == 1 { "" } else { "s" },
                    by.join("; ")
                ),
            )
        } else if let Some(why) = skip {
            (Status::NotChecked, why)
        } else {
            let detail = if let (true, Some(d)) = (inv == "PLAN-1", &plan1) {
                d.clone()
            } else if matches!(inv, "ACL-2" | "ROUTE-1") {
                switch_detail.clone()
            } else if inv == "REACH-2" {
                format!(
                    "{} VIP/TIP address{} walked from every switch; {switch_detail}",
                    switches.followed,
                    if switches.followed == 1 { "" } else { "es" }
                )
            } else if inv == "PUSH-1" {
                let (nb, s) = (net.bridges.len(), |n: usize| if n == 1 { "" } else { "s" });
                format!(
                    "{nb} bridge{}: every group a flow names defined once, no two flows of a table and priority overlap with other actions; {n_switches} switch{}: every multicast group an entry names installed",
                    s(nb),
                    if n_switches == 1 { "" } else { "es" }
                )
            } else {
                let d = detail_of(inv, res, input.policy);
                if inv == "REACH-1" && switches.hosts > 0 {
                    format!(
                        "{d}; {} host underlay address{} walked from every switch; {switch_detail}",
                        switches.hosts,
                        if switches.hosts == 1 { "" } else { "es" }
                    )
                } else if n_switches > 0 && matches!(inv, "ISO-1" | "ISO-2" | "REACH-1" | "AFF-1") {
                    format!("{d}; {switch_detail}")
                } else {
                    d
                }
            };
            (Status::Proven, detail)
        };
        verdicts.push(Verdict {
            invariant: inv.to_string(),
            status,
            detail,
            violations: n + waived,
            counterexamples: cxs,
        });
    }
    let accepted_by = input.accept.iter().cloned().zip(per_waiver).collect();
    Ok(Report {
        verdicts,
        stats: Stats {
            devices: net.bridges.len(),
            flows: net.bridges.iter().map(|b| b.flows.len()).sum(),
            switches: input.artifacts.switches.len(),
            agents: agents_of(input.artifacts),
            vms: input.policy.vms.len(),
            outcomes: res.outcomes,
            pairs: res.pairs_checked,
            millis: t0.elapsed().as_millis(),
            phases: BTreeMap::new(),
            incremental: None,
        },
        notes,
        accepted: accepted_by,
    })
}

/// The devices whose agent documents the artifacts hold: the first column
/// of every `agent_*` row.
fn agents_of(a: &Artifacts) -> usize {
    let mut names = BTreeSet::new();
    for (rel, rows) in &a.relations {
        if rel.starts_with("agent_") {
            names.extend(rows.iter().filter_map(|r| r.vals.first()));
        }
    }
    names.len()
}

/// Adds to each counterexample the rules and intent facts behind the
/// artifact rows it cites (a table check cites rows, not their origin), so
/// every counterexample names the intent `file:line` behind it.
fn cite_intent(input: &Input, found: &mut BTreeMap<&str, Vec<Counterexample>>) {
    // the `file:line`s cited (few), then one pass over the rows for them:
    // no index of every row of the artifacts
    let cited: std::collections::BTreeSet<String> = found
        .values()
        .flatten()
        .flat_map(|cx| &cx.cites)
        .filter_map(|c| c.split_whitespace().next())
        .map(str::to_string)
        .collect();
    if cited.is_empty() {
        return;
    }
    let mut rows: BTreeMap<&str, (&str, &Row)> = BTreeMap::new();
    for (rel, rs) in &input.artifacts.relations {
        for r in rs {
            if cited.contains(r.at.as_str()) {
                rows.entry(r.at.as_str()).or_insert((rel.as_str(), r));
            }
        }
    }
    for cx in found.values_mut().flatten() {
        let mut extra = Vec::new();
        for c in &cx.cites {
            let at = c.split_whitespace().next().unwrap_or("");
            if let Some((rel, r)) = rows.get(at) {
                extra.extend(input.provenance.row(rel, r));
            }
        }
        for e in extra {
            if !cx.cites.contains(&e) {
                cx.cites.push(e);
            }
        }
    }
}

/// Adds to each counterexample the rules and intent facts behind the OVS
/// flows it cites by `file:line` (PUSH-1 cites flows, not paths).
fn cite_flows(input: &Input, cxs: &mut [Counterexample]) {
    let cited: std::collections::BTreeSet<&str> = cxs
        .iter()
        .flat_map(|cx| &cx.cites)
        .filter_map(|c| c.split_whitespace().next())
        .collect();
    if cited.is_empty() {
        return;
    }
    let mut flows: BTreeMap<String, (&str, &FlowText)> = BTreeMap::new();
    for (host, fs) in &input.artifacts.flows {
        for f in fs {
            if cited.contains(f.at.as_str()) {
                flows.insert(f.at.clone(), (host.as_str(), f));
            }
        }
    }
    for cx in cxs {
        let mut extra = Vec::new();
        for c in &cx.cites {
            let at = c.split_whitespace().next().unwrap_or("");
            if let Some((host, f)) = flows.get(at) {
                extra.extend(input.provenance.flow(host, f));
            }
        }
        for e in extra {
            if !cx.cites.contains(&e) {
                cx.cites.push(e);
            }
        }
    }
}

fn detail_of(inv: &str, res: &checks::PathResults, p: &Policy) -> String {
    match inv {
        "ISO-1" | "ISO-2" | "ISO-3" => format!("every packet of {} VMs traced", p.vms.len()),
        "REACH-1" | "ACL-1" => format!("{} VM pairs", res.pairs_checked),
        "AFF-3" => "every tapped connection's reply is tapped alike".into(),
        _ => "holds".into(),
    }
}

fn path_cx(net: &Network, input: &Input, v: &checks::Violation) -> Counterexample {
    let from = &input.policy.vms[v.from];
    let headers = net.space.witness(&v.set);
    let mut cites = vec![format!(
        "{}  the sending VM {}/{}",
        from.at, from.tenant, from.name
    )];
    if let Some(t) = v.to {
        let b = &input.policy.vms[t];
        cites.push(format!(
            "{}  the receiving VM {}/{}",
            b.at, b.tenant, b.name
        ));
    }
    let mut paths = Vec::new();
    let packet = headers.map(|h| {
        let single = h.0.iter().fold(net.space.all(), |acc, (f, x)| {
            acc.and(&net.space.field_eq(*f, *x, f.mask()))
        });
        for o in net.trace(from, single, true) {
            paths.push(render_path(net, input, &o, &mut cites));
        }
        Packet::from_headers(
            format!(
                "{} port {} ({}/{})",
                from.host, from.port, from.tenant, from.name
            ),
            &h,
        )
    });
    let mut seen = std::collections::BTreeSet::new();
    cites.retain(|c| seen.insert(c.clone()));
    Counterexample {
        invariant: v.invariant.to_string(),
        key: None,
        summary: v.summary.clone(),
        packet,
        paths,
        cites,
    }
}

fn render_path(net: &Network, input: &Input, o: &Outcome, cites: &mut Vec<String>) -> PathCx {
    let mut hops = Vec::new();
    for h in &o.path {
        match *h {
            Hop::Flow { bridge, handle } => {
                let b = &net.bridges[bridge as usize];
                let Some(f) = b.cite(input.artifacts, handle) else {
                    continue;
                };
                hops.push(format!(
                    "{} table={} priority={} cookie={:#x} {} actions={}  [{}]",
                    b.name,
                    f.table,
                    f.priority,
                    f.cookie,
                    if f.matches.is_empty() {
                        "(any)"
                    } else {
                        &f.matches
                    },
                    f.actions,
                    f.at
                ));
                cites.extend(input.provenance.flow(&b.name, f));
            }
            Hop::Group {
                bridge,
                group,
                bucket,
            } => {
                let b = &net.bridges[bridge as usize];
                if let Some(g) = b.groups.get(&group) {
                    hops.push(format!(
                        "{} group {group} ({}) bucket {bucket}  [{}]",
                        b.name, g.text.kind, g.text.at
                    ));
                }
            }
            Hop::Lb { handle } => {
                if let Some((rel, r)) = net.lb.row(input.artifacts, handle) {
                    hops.push(format!("{}({})  [{}]", rel, r.vals.join(", "), r.at));
                    cites.extend(input.provenance.row(rel, r));
                }
            }
            Hop::Underlay { to } => {
                let ip = std::net::Ipv4Addr::from(to);
                let who = input
                    .policy
                    .underlay
                    .get(&to)
                    .cloned()
                    .unwrap_or_else(|| "Mux/multicast".into());
                hops.push(format!("underlay → {ip} ({who})"));
            }
        }
    }
    let dev = net
        .bridges
        .get(o.device as usize)
        .map_or("?", |b| b.name.as_str());
    let end = match &o.end {
        End::Deliver { port } => match input.policy.vm_at(dev, *port) {
            Some(vm) => format!(
                "delivered to {dev} port {port}: VM {}/{}",
                vm.tenant, vm.name
            ),
            None => format!("delivered to {dev} port {port} (no VM)"),
        },
        End::Uplink => format!("sent to the uplink of {dev} (the Internet)"),
        End::Tunnel { tun_dst, .. } => {
            format!("tunnelled to {}", std::net::Ipv4Addr::from(*tun_dst))
        }
        End::Drop { why } => format!("dropped: {why}"),
    };
    PathCx { hops, end }
}
