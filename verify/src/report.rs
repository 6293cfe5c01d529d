//! Verdicts and counterexamples, and their three renderings.
//!
//! Expects verdicts from `lib.rs`. Guarantees: a human report (one line per
//! invariant, then each counterexample: packet, paths hop by hop, cited
//! artifact rows and intent lines), a JSON document (same content,
//! machine-readable, stable field names) and a JUnit XML file (one test case
//! per invariant; a violation is a failure whose message is the first
//! counterexample) for CI.

use crate::packet;
use crate::space::{show, Field, Headers, ETH_ARP, ETH_IP};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Serialize)]
pub struct Packet {
    /// Where the packet enters (device and port, or the Internet).
    pub ingress: String,
    pub headers: BTreeMap<String, String>,
    /// The Ethernet frame, hex (also written to the pcap).
    pub frame_hex: String,
    #[serde(skip)]
    pub frame: Vec<u8>,
}

impl Packet {
    pub fn from_headers(ingress: String, h: &Headers) -> Packet {
        let ty = h.get(Field::DlType);
        let mut fields = vec![Field::DlSrc, Field::DlDst, Field::DlType];
        if ty == ETH_IP {
            fields.extend([Field::NwSrc, Field::NwDst, Field::NwProto]);
            if matches!(h.get(Field::NwProto), 6 | 17) {
                fields.extend([Field::TpSrc, Field::TpDst]);
            }
        } else if ty == ETH_ARP {
            fields.extend([
                Field::ArpOp,
                Field::ArpSpa,
                Field::ArpTpa,
                Field::ArpSha,
                Field::ArpTha,
            ]);
        }
        let headers = fields
            .into_iter()
            .map(|f| (f.to_string(), show(f, h.get(f))))
            .collect();
        let frame = packet::frame(h);
        Packet {
            ingress,
            headers,
            frame_hex: packet::hex(&frame),
            frame,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct PathCx {
    pub hops: Vec<String>,
    pub end: String,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Counterexample {
    pub invariant: String,
    /// What a waiver names to accept this violation for one change
    /// (`--accept INVARIANT:KEY`; AFF-2: `VIP:PORT/PROTO`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub summary: String,
    pub packet: Option<Packet>,
    pub paths: Vec<PathCx>,
    /// `file:line  text` of the artifact rows, rules and intent facts behind it.
    pub cites: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Proven,
    Violated,
    NotChecked,
    /// Violated only where a waiver accepts it, for this change.
    Accepted,
}

/// A violation an operator accepts for one change: the invariant, the
/// counterexample's key, why, and who. Recorded with the generation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Waiver {
    pub invariant: String,
    pub key: String,
    pub reason: String,
    pub actor: String,
}

/// `note` and what a generation records of each waiver that accepted
/// violations (who, why, how many), joined with `; `.
pub fn note_with_waivers(note: &str, accepted: &[(Waiver, usize)]) -> String {
    let waived = accepted.iter().map(|(w, n)| {
        format!(
            "accepted {} ({n} violation{}) by {}: {}",
            w.name(),
            if *n == 1 { "" } else { "s" },
            w.actor,
            w.reason
        )
    });
    std::iter::once(note.to_string())
        .chain(waived)
        .filter(|n| !n.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// The invariants a waiver may name: those about a change (what moves
/// between two generations), never what must hold of every generation.
pub const WAIVABLE: [&str; 1] = ["AFF-2"];

impl Waiver {
    /// `INVARIANT:KEY`, as `--accept` takes it.
    pub fn parse(text: &str, reason: &str, actor: &str) -> Result<Waiver, String> {
        let (inv, key) = text
            .split_once(':')
            .filter(|(i, k)| !i.is_empty() && !k.is_empty())
            .ok_or_else(|| {
                format!("`{text}` is not INVARIANT:KEY (e.g. AFF-2:203.0.113.10:80/6)")
            })?;
        if !WAIVABLE.contains(&inv) {
            return Err(format!(
                "{inv} cannot be accepted: only a change's invariants ({}) can be, for one change",
                WAIVABLE.join(", ")
            ));
        }
        Ok(Waiver {
            invariant: inv.into(),
            key: key.into(),
            reason: reason.into(),
            actor: actor.into(),
        })
    }

    pub fn name(&self) -> String {
        format!("{}:{}", self.invariant, self.key)
    }

    pub fn covers(&self, c: &Counterexample) -> bool {
        c.invariant == self.invariant && c.key.as_deref() == Some(self.key.as_str())
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    pub invariant: String,
    pub status: Status,
    pub detail: String,
    /// Number of violations found (counterexamples are capped).
    pub violations: usize,
    pub counterexamples: Vec<Counterexample>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Stats {
    /// OVS bridges.
    pub devices: usize,
    pub flows: usize,
    /// P4 switches (their requests as loaded).
    pub switches: usize,
    /// Hosts and Muxes whose agent documents (`agent_*` rows) were read.
    pub agents: usize,
    pub vms: usize,
    pub outcomes: usize,
    pub pairs: usize,
    pub millis: u128,
    /// A full verification's phases (ms): `model` (the network built from
    /// the artifacts), `paths` (every VM traced and checked), `tables`
    /// (AFF-1/3/4, CAP-1 and, with `--against`, AFF-2/PLAN-1), `report`
    /// (the P4 switches' symbolic checks and the counterexamples).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub phases: std::collections::BTreeMap<&'static str, u128>,
    /// Set when this report came from an incremental update.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incremental: Option<crate::incremental::Update>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub verdicts: Vec<Verdict>,
    pub stats: Stats,
    pub notes: Vec<String>,
    /// The waivers given, each with the violations it accepted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub accepted: Vec<(Waiver, usize)>,
}

impl Report {
    /// A waiver given that accepted no violation (waivers name what they
    /// accept; they never silence an invariant).
    pub fn unused_waiver(&self) -> Option<&Waiver> {
        self.accepted.iter().find(|(_, n)| *n == 0).map(|(w, _)| w)
    }

    pub fn violated(&self) -> bool {
        self.verdicts.iter().any(|v| v.status == Status::Violated)
    }

    /// All counterexample frames, in report order.
    pub fn frames(&self) -> Vec<Vec<u8>> {
        self.verdicts
            .iter()
            .flat_map(|v| &v.counterexamples)
            .filter_map(|c| c.packet.as_ref().map(|p| p.frame.clone()))
            .collect()
    }

    pub fn human(&self) -> String {
        let mut s = String::new();
        for v in &self.verdicts {
            let mark = match v.status {
                Status::Proven => "proven     ",
                Status::Violated => "VIOLATED   ",
                Status::NotChecked => "not checked",
                Status::Accepted => "accepted   ",
            };
            s.push_str(&format!("{mark} {:<8} {}\n", v.invariant, v.detail));
        }
        let mut k = 0;
        for v in self
            .verdicts
            .iter()
            .filter(|v| matches!(v.status, Status::Violated | Status::Accepted))
        {
            for c in &v.counterexamples {
                k += 1;
                s.push_str(&format!(
                    "\ncounterexample {k}: {}{}: {}\n",
                    c.invariant,
                    if v.status == Status::Accepted {
                        " (accepted)"
                    } else {
                        ""
                    },
                    c.summary
                ));
                if let Some(p) = &c.packet {
                    let h: Vec<String> =
                        p.headers.iter().map(|(f, x)| format!("{f}={x}")).collect();
                    s.push_str(&format!(
                        "  packet (frame {k} of the pcap), entering at {}:\n    {}\n",
                        p.ingress,
                        h.join(",")
                    ));
                }
                for (i, path) in c.paths.iter().enumerate() {
                    s.push_str(&format!("  path {}:\n", i + 1));
                    for hop in &path.hops {
                        s.push_str(&format!("    {hop}\n"));
                    }
                    s.push_str(&format!("    => {}\n", path.end));
                }
                if !c.cites.is_empty() {
                    s.push_str("  because of:\n");
                    for ct in &c.cites {
                        s.push_str(&format!("    --> {ct}\n"));
                    }
                }
            }
            if v.violations > v.counterexamples.len() {
                s.push_str(&format!(
                    "\n({} more {} violations not shown)\n",
                    v.violations - v.counterexamples.len(),
                    v.invariant
                ));
            }
        }
        for n in &self.notes {
            s.push_str(&format!("note: {n}\n"));
        }
        let st = &self.stats;
        s.push_str(&format!(
            "\n{}: {} ({} flows), {}, {}, {} VMs traced ({} path outcomes, {} VM pairs) in {} ms\n",
            if self.violated() {
                "VIOLATED"
            } else {
                "proven"
            },
            counted(st.devices, "bridge", "bridges"),
            st.flows,
            counted(st.switches, "switch", "switches"),
            counted(st.agents, "host agent", "host agents"),
            st.vms,
            st.outcomes,
            st.pairs,
            st.millis
        ));
        if let Some(u) = &st.incremental {
            s.push_str(&format!(
                "incremental: re-checked {} of {} VMs ({} bridges rebuilt{}{}) in {:.1} ms\n",
                u.rechecked,
                u.vms,
                u.bridges_rebuilt,
                if u.lb_reloaded {
                    ", load balancers re-read"
                } else {
                    ""
                },
                if u.full {
                    ", full: the device set changed"
                } else {
                    ""
                },
                u.millis
            ));
        }
        s
    }

    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    pub fn junit(&self) -> String {
        let failures = self
            .verdicts
            .iter()
            .filter(|v| v.status == Status::Violated)
            .count();
        let skipped = self
            .verdicts
            .iter()
            .filter(|v| v.status == Status::NotChecked)
            .count();
        let mut s = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"netc verify\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\" time=\"{:.3}\">\n",
            self.verdicts.len(),
            self.stats.millis as f64 / 1000.0
        );
        for v in &self.verdicts {
            s.push_str(&format!(
                "  <testcase classname=\"netc.verify\" name=\"{}\">\n",
                xml(&v.invariant)
            ));
            match v.status {
                Status::Proven => {}
                Status::Accepted => s.push_str(&format!(
                    "    <system-out>{}</system-out>\n",
                    xml(&v.detail)
                )),
                Status::NotChecked => {
                    s.push_str(&format!("    <skipped message=\"{}\"/>\n", xml(&v.detail)))
                }
                Status::Violated => {
                    let msg = v
                        .counterexamples
                        .first()
                        .map_or(v.detail.clone(), |c| c.summary.clone());
                    let body: Vec<String> = v
                        .counterexamples
                        .iter()
                        .map(|c| serde_json::to_string(c).unwrap_or_default())
                        .collect();
                    s.push_str(&format!(
                        "    <failure message=\"{}\">{}</failure>\n",
                        xml(&msg),
                        xml(&body.join("\n"))
                    ));
                }
            }
            s.push_str("  </testcase>\n");
        }
        s.push_str("</testsuite>\n");
        s
    }
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
