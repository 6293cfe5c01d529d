//! `netc predict`'s output: the prediction as JSON, or as text — per
//! bridge each path's flows and fate, per switch its hop in the one form
//! switch counterexamples print ([`crate::p4::hop`]).

use super::{Fate, HeaderValues, Prediction};

impl Prediction {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// The human report: per bridge, each path's flows and its fate; per
    /// switch, its hop as a counterexample prints it and where each copy goes.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for (i, seg) in self.segments.iter().enumerate() {
            let mut via = match (seg.tun_id, &seg.tun_dst) {
                (Some(id), Some(dst)) => format!(", VXLAN tun_id {id} to {dst}"),
                (Some(id), None) => format!(", tun_id {id}"),
                _ => String::new(),
            };
            if let Some((fs, fp)) = seg.from {
                via += &format!(", from segment {} path {}", fs + 1, fp + 1);
            }
            s += &format!(
                "[{}] {}{} in_port {}{via}: {}\n",
                i + 1,
                if seg.kind == "switch" { "switch " } else { "" },
                seg.device,
                seg.in_port,
                brief(&seg.headers)
            );
            if seg.kind == "switch" {
                // the hop exactly as a switch counterexample prints it
                for l in &seg.lines {
                    s += &format!("    {l}\n");
                }
                for (j, p) in seg.paths.iter().enumerate() {
                    if let Fate::Forward { port, to, .. } = &p.fate {
                        s += &format!("  path {}: port {port} → {to}\n", j + 1);
                    }
                }
                continue;
            }
            for (j, p) in seg.paths.iter().enumerate() {
                let alt = if p.choices.is_empty() {
                    String::new()
                } else {
                    let c: Vec<String> = p
                        .choices
                        .iter()
                        .map(|(g, b)| format!("group {g} bucket {b}"))
                        .collect();
                    format!(" (if OVS picks {})", c.join(", "))
                };
                s += &format!("  path {}{alt}:\n", j + 1);
                for f in &p.flows {
                    s += &format!(
                        "    table={} priority={} cookie={} {} actions={}  [{}]\n",
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
                    );
                }
                for b in &p.buckets {
                    s += &format!(
                        "    group {} ({}) bucket {}  [{}]\n",
                        b.group, b.kind, b.bucket, b.at
                    );
                }
                s += &format!("    → {}\n", fate_text(&p.fate));
            }
        }
        if self.truncated {
            s += "(not followed further: a value the model cannot know, or more than 64 devices)\n";
        }
        s
    }
}

fn brief(h: &HeaderValues) -> String {
    let g = |k: &str| h.get(k).map_or("-", |v| v.as_str());
    match g("dl_type") {
        "0x0800" => {
            let mut s = format!(
                "ip proto {} {}:{} → {}:{}",
                g("nw_proto"),
                g("nw_src"),
                g("tp_src"),
                g("nw_dst"),
                g("tp_dst")
            );
            if !h.contains_key("tp_src") {
                s = format!(
                    "ip proto {} {} → {}",
                    g("nw_proto"),
                    g("nw_src"),
                    g("nw_dst")
                );
            }
            format!("{s} ({} → {})", g("dl_src"), g("dl_dst"))
        }
        "0x0806" => format!(
            "arp op {} {} ({}) asks for {} ({} → {})",
            g("arp_op"),
            g("arp_spa"),
            g("arp_sha"),
            g("arp_tpa"),
            g("dl_src"),
            g("dl_dst")
        ),
        t => format!("eth_type {t} ({} → {})", g("dl_src"), g("dl_dst")),
    }
}

fn fate_text(f: &Fate) -> String {
    match f {
        Fate::Output { port, headers } => format!("output to port {port}: {}", brief(headers)),
        Fate::Tunnel {
            tun_id,
            tun_dst,
            to,
            headers,
        } => format!(
            "tunnel tun_id={tun_id} tun_dst={tun_dst} ({}): {}",
            to.as_deref()
                .unwrap_or("no bridge owns it: a Mux or outside"),
            brief(headers)
        ),
        Fate::Uplink { headers } => format!("output to the uplink (port 2): {}", brief(headers)),
        Fate::Drop { why } => format!("dropped: {why}"),
        Fate::Forward { port, to, .. } => format!("port {port} → {to}"),
    }
}
