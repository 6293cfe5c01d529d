//! Loading an artifact directory as `netc compile` writes it.
//!
//! Expects `DIR/relations/<rel>.csv` (tab-separated rows, location first)
//! and, when the OVS target has rendered them, `DIR/ovs/<host>.flows` /
//! `.groups` (ovs-ofctl add-flows / add-groups lines, specs/targets.md §3.1),
//! `DIR/p4/<switch>.txtpb` and `DIR/host/<device>.json`.
//! Guarantees: the OVS model is built from the `.flows`/`.groups` text when
//! present (exactly what is pushed), else from `ovs_flow.csv` /
//! `ovs_group.csv` (the same text, one row per flow); the `agent_*` rows
//! from the host-agent documents when present (`host_docs.rs`); every row remembers
//! its `file:line` for counterexamples; a malformed line is an
//! [`ArtifactError`] naming file, line and what was expected. Everything a
//! check reads is read here, once (the P4 requests too, [`SwitchText`]): no
//! check reads DIR again, so a directory removed or rewritten after
//! loading cannot change, or empty, what is verified.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A row of a relation file, with where it came from.
#[derive(Clone, Debug)]
pub struct Row {
    pub vals: Vec<String>,
    pub at: String,
}

/// One OpenFlow flow of a bridge, as text.
#[derive(Clone, Debug, Default)]
pub struct FlowText {
    pub table: u8,
    pub priority: u16,
    pub cookie: u64,
    pub matches: String,
    pub actions: String,
    pub at: String,
}

/// One group of a bridge, as text.
#[derive(Clone, Debug)]
pub struct GroupText {
    pub id: u32,
    pub kind: String,
    pub buckets: String,
    pub at: String,
}

/// One P4 switch's `WriteRequest` as it will be pushed (`p4/<switch>.txtpb`).
#[derive(Clone, Debug)]
pub struct SwitchText {
    /// Where it was read: counterexamples cite `path:line`.
    pub path: PathBuf,
    /// The request's text, held so that every check reads what was loaded
    /// (never the directory again, which may be gone or changed by then).
    pub text: Arc<str>,
}

/// A complete artifact set.
#[derive(Clone, Debug, Default)]
pub struct Artifacts {
    pub dir: PathBuf,
    /// Each row shared: a next generation cloned from this one shares the
    /// rows it did not edit, and an update pairs those by pointer.
    pub relations: BTreeMap<String, Vec<Arc<Row>>>,
    pub flows: BTreeMap<String, Vec<FlowText>>,
    pub groups: BTreeMap<String, Vec<GroupText>>,
    /// The P4 switches' requests by switch name, as loaded.
    pub switches: BTreeMap<String, SwitchText>,
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("{at}: {message}")]
pub struct ArtifactError {
    pub at: String,
    pub message: String,
    pub hint: Option<String>,
}

pub(crate) fn bad(at: impl Into<String>, message: impl Into<String>) -> ArtifactError {
    ArtifactError {
        at: at.into(),
        message: message.into(),
        hint: None,
    }
}

impl Artifacts {
    pub fn rows(&self, rel: &str) -> &[Arc<Row>] {
        self.relations.get(rel).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The same artifacts cited as if read from `to`: every `file:line`
    /// under this set's directory is moved under `to`. An older generation
    /// rebased onto the newer one's directory differs from it only where
    /// the files differ ([`crate::dirty::Dirty::between`] then names only
    /// those), and nothing of it is cited from a directory no longer shown.
    pub fn rebase(&mut self, to: &Path) {
        let (from, to) = (self.dir.display().to_string(), to.display().to_string());
        if from == to || from.is_empty() {
            return;
        }
        let move_at = |at: &mut String| {
            if let Some(rest) = at.strip_prefix(from.as_str()) {
                if rest.starts_with('/') {
                    *at = format!("{to}{rest}");
                }
            }
        };
        for r in self.relations.values_mut().flatten() {
            // a row is copied only if its citation moves (it may be shared)
            let mut at = r.at.clone();
            move_at(&mut at);
            if at != r.at {
                Arc::make_mut(r).at = at;
            }
        }
        for f in self.flows.values_mut().flatten() {
            move_at(&mut f.at);
        }
        for g in self.groups.values_mut().flatten() {
            move_at(&mut g.at);
        }
        for sw in self.switches.values_mut() {
            let mut at = sw.path.display().to_string();
            move_at(&mut at);
            sw.path = PathBuf::from(at);
        }
        self.dir = PathBuf::from(to);
    }

    /// Reads `dir`.
    pub fn load(dir: &Path) -> Result<Artifacts, ArtifactError> {
        let rel_dir = dir.join("relations");
        if !rel_dir.is_dir() {
            return Err(ArtifactError {
                at: dir.display().to_string(),
                message: "not an artifact directory (no `relations/` in it)".into(),
                hint: Some("pass a directory written by `netc compile INTENT --out DIR`".into()),
            });
        }
        let mut a = Artifacts {
            dir: dir.to_path_buf(),
            ..Default::default()
        };
        let mut names: Vec<PathBuf> = read_dir(&rel_dir)?
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "csv"))
            .collect();
        names.sort();
        let ovs_dir = dir.join("ovs");
        let rendered = ovs_dir.is_dir()
            && read_dir(&ovs_dir)?
                .iter()
                .any(|p| p.extension().is_some_and(|e| e == "flows"));
        for p in names {
            let rel = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            // the rendered `.flows`/`.groups` are the same flows: reading
            // the rows too would hold every flow's text twice (GBs at 100k VMs)
            if rendered && (rel == "ovs_flow" || rel == "ovs_group") {
                continue;
            }
            let text = read(&p)?;
            let rows = text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .map(|(i, l)| {
                    Arc::new(Row {
                        vals: l.split('\t').map(str::to_string).collect(),
                        at: format!("{}:{}", p.display(), i + 1),
                    })
                })
                .collect();
            a.relations.insert(rel, rows);
        }
        // The P4 switches: what their WriteRequests install, not the rows;
        // the agents: the documents pushed to them.
        a.switches = crate::p4::read_switches(dir, &mut a.relations)?;
        crate::host_docs::read_host_docs(dir, &mut a.relations)?;
        if rendered {
            a.load_ovs_files(&ovs_dir)?;
        } else {
            a.load_ovs_rows()?;
        }
        Ok(a)
    }

    fn load_ovs_rows(&mut self) -> Result<(), ArtifactError> {
        for r in self.rows("ovs_flow").to_vec() {
            if r.vals.len() != 6 {
                return Err(bad(
                    &r.at,
                    "an ovs_flow row has 6 columns (host, table, priority, match, actions, cookie)",
                ));
            }
            let num = |i: usize, what: &str| {
                r.vals[i]
                    .parse::<u64>()
                    .map_err(|_| bad(&r.at, format!("{what} `{}` is not a number", r.vals[i])))
            };
            let f = FlowText {
                table: num(1, "table")?
                    .try_into()
                    .map_err(|_| bad(&r.at, "table > 254"))?,
                priority: num(2, "priority")?
                    .try_into()
                    .map_err(|_| bad(&r.at, "priority > 65535"))?,
                cookie: num(5, "cookie")?,
                matches: r.vals[3].clone(),
                actions: r.vals[4].clone(),
                at: r.at.clone(),
            };
            self.flows.entry(r.vals[0].clone()).or_default().push(f);
        }
        for r in self.rows("ovs_group").to_vec() {
            if r.vals.len() != 4 {
                return Err(bad(
                    &r.at,
                    "an ovs_group row has 4 columns (host, group_id, type, buckets)",
                ));
            }
            let id = r.vals[1]
                .parse()
                .map_err(|_| bad(&r.at, "group_id is not a number"))?;
            self.groups
                .entry(r.vals[0].clone())
                .or_default()
                .push(GroupText {
                    id,
                    kind: r.vals[2].clone(),
                    buckets: r.vals[3].clone(),
                    at: r.at.clone(),
                });
        }
        Ok(())
    }

    fn load_ovs_files(&mut self, ovs_dir: &Path) -> Result<(), ArtifactError> {
        for p in read_dir(ovs_dir)? {
            let host = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let ext = p.extension().map(|e| e.to_string_lossy().into_owned());
            let text = match ext.as_deref() {
                Some("flows") | Some("groups") => read(&p)?,
                _ => continue,
            };
            for (i, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let at = format!("{}:{}", p.display(), i + 1);
                if ext.as_deref() == Some("flows") {
                    let f = parse_flow_line(line, &at)?;
                    self.flows.entry(host.clone()).or_default().push(f);
                } else {
                    let g = parse_group_line(line, &at)?;
                    self.groups.entry(host.clone()).or_default().push(g);
                }
            }
        }
        Ok(())
    }
}

/// `table=T,priority=P,cookie=C[,match],actions=A`
pub fn parse_flow_line(line: &str, at: &str) -> Result<FlowText, ArtifactError> {
    let (head, actions) = line.split_once("actions=").ok_or_else(|| ArtifactError {
        at: at.into(),
        message: "a flow line has `actions=`".into(),
        hint: Some("expected `table=T,priority=P,cookie=C[,match],actions=A`".into()),
    })?;
    let (mut table, mut priority, mut cookie) = (0u8, 32768u16, 0u64);
    let mut rest = Vec::new();
    for tok in head.trim_end_matches([',', ' ']).split(',').map(str::trim) {
        let num = |v: &str| {
            let v = v.split('/').next().unwrap_or(v);
            if let Some(h) = v.strip_prefix("0x") {
                u64::from_str_radix(h, 16).ok()
            } else {
                v.parse().ok()
            }
        };
        if let Some(v) = tok.strip_prefix("table=") {
            table = num(v)
                .and_then(|n| u8::try_from(n).ok())
                .ok_or_else(|| bad(at, format!("bad table `{v}`")))?;
        } else if let Some(v) = tok.strip_prefix("priority=") {
            priority = num(v)
                .and_then(|n| u16::try_from(n).ok())
                .ok_or_else(|| bad(at, format!("bad priority `{v}`")))?;
        } else if let Some(v) = tok.strip_prefix("cookie=") {
            cookie = num(v).ok_or_else(|| bad(at, format!("bad cookie `{v}`")))?;
        } else if !tok.is_empty() {
            rest.push(tok);
        }
    }
    Ok(FlowText {
        table,
        priority,
        cookie,
        matches: rest.join(","),
        actions: actions.trim().to_string(),
        at: at.into(),
    })
}

/// `group_id=G,type=T[,bucket=…]`
pub fn parse_group_line(line: &str, at: &str) -> Result<GroupText, ArtifactError> {
    let rest = line
        .strip_prefix("group_id=")
        .ok_or_else(|| bad(at, "a group line starts with `group_id=`"))?;
    let (id, rest) = rest.split_once(',').unwrap_or((rest, ""));
    let id = id
        .parse()
        .map_err(|_| bad(at, format!("bad group_id `{id}`")))?;
    let rest = rest
        .strip_prefix("type=")
        .ok_or_else(|| bad(at, "expected `type=` after the group id"))?;
    let (kind, buckets) = rest.split_once(',').unwrap_or((rest, ""));
    Ok(GroupText {
        id,
        kind: kind.to_string(),
        buckets: buckets.to_string(),
        at: at.into(),
    })
}

pub(crate) fn read_dir(d: &Path) -> Result<Vec<PathBuf>, ArtifactError> {
    let rd = std::fs::read_dir(d).map_err(|e| bad(d.display().to_string(), e.to_string()))?;
    let mut v: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    v.sort();
    Ok(v)
}

pub(crate) fn read(p: &Path) -> Result<String, ArtifactError> {
    std::fs::read_to_string(p).map_err(|e| bad(p.display().to_string(), e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_line() {
        let f = parse_flow_line(
            "table=30,priority=100,cookie=2,ip,reg6=5001,nw_dst=10.1.1.11,actions=output:10",
            "x:1",
        )
        .unwrap();
        assert_eq!((f.table, f.priority, f.cookie), (30, 100, 2));
        assert_eq!(f.matches, "ip,reg6=5001,nw_dst=10.1.1.11");
        assert_eq!(f.actions, "output:10");
        let g = parse_group_line("group_id=1000,type=all,bucket=output:10", "x:2").unwrap();
        assert_eq!(
            (g.id, g.kind.as_str(), g.buckets.as_str()),
            (1000, "all", "bucket=output:10")
        );
        assert!(parse_flow_line("table=0,priority=1", "x:3").is_err());
    }

    #[test]
    fn rebase_moves_citations_under_the_new_directory() {
        let mut a = Artifacts {
            dir: PathBuf::from("/old"),
            ..Default::default()
        };
        let f = parse_flow_line("table=0,priority=1,actions=drop", "/old/ovs/h1.flows:3").unwrap();
        a.flows.insert("h1".into(), vec![f]);
        a.relations.insert(
            "agent_vm".into(),
            vec![Arc::new(Row {
                vals: vec!["h1".into()],
                at: "/older/relations/agent_vm.csv:1".into(),
            })],
        );
        a.rebase(Path::new("/new"));
        assert_eq!(a.flows["h1"][0].at, "/new/ovs/h1.flows:3");
        // not under `/old/`: left as it is
        assert_eq!(
            a.relations["agent_vm"][0].at,
            "/older/relations/agent_vm.csv:1"
        );
        assert_eq!(a.dir, PathBuf::from("/new"));
    }
}
