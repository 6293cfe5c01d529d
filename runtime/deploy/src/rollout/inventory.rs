//! The inventory: how `netc apply` reaches each device.
//!
//! A TOML file (format in `specs/store.md` §3 and the README):
//!
//! ```toml
//! [defaults]                       # all optional
//! ofctl = "ovs-ofctl"              # the ovs-ofctl to run
//! python = "python3"               # runs targets/p4client
//! p4client = "/opt/netc/targets"   # the directory holding p4client/
//! timeout_secs = 60                # per device push
//!
//! [ovs]                            # host = ovs-ofctl switch argument
//! h1 = "unix:/run/openvswitch/br-int.mgmt"
//!
//! [p4.tor1]                        # P4Runtime over gRPC
//! address = "10.0.0.1:9559"
//! device_id = 1                    # default 1
//! election_id = 1                  # default 1
//! device_config = "netc.bin"       # optional: the compiled netc.p4 for this target
//!                                  # (p4c output; none can be built here, see p4/README.md)
//!
//! [agent]                          # host = the directory `netc agent --artifacts` watches
//! h2 = "/var/lib/netc/h2"          # relative paths are relative to this file
//! ```
//!
//! Expects: UTF-8 text. Guarantees: every mistake (bad TOML, an unknown key,
//! a wrong type, a host under both `[ovs]` and `[agent]`, which would make two
//! writers of one bridge) is an [`InventoryError`] at `file:line:column` with
//! a hint; a parsed inventory lists its targets sorted by device.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// How one device is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// An OVS bridge, by `ovs-ofctl` switch argument.
    Ovs { bridge: String },
    /// A P4Runtime server.
    P4 {
        address: String,
        device_id: u64,
        election_id: u64,
        /// The target's compiled program, sent with the P4Info when `netc
        /// apply` sets the pipeline (none: an empty device config).
        device_config: Option<PathBuf>,
    },
    /// A host agent's artifact directory.
    Agent { dir: PathBuf },
}

impl Route {
    /// `ovs`, `p4` or `agent`.
    pub fn kind(&self) -> &'static str {
        match self {
            Route::Ovs { .. } => "ovs",
            Route::P4 { .. } => "p4",
            Route::Agent { .. } => "agent",
        }
    }

    /// Whether an artifact of target `kind` (`ovs`, `p4`, `host`) travels by this route.
    pub fn carries(&self, kind: &str) -> bool {
        match self {
            Route::Ovs { .. } => kind == "ovs",
            Route::P4 { .. } => kind == "p4",
            Route::Agent { .. } => kind == "ovs" || kind == "host",
        }
    }

    /// Where, for messages.
    pub fn address(&self) -> String {
        match self {
            Route::Ovs { bridge } => bridge.clone(),
            Route::P4 {
                address, device_id, ..
            } => format!("{address} (device {device_id})"),
            Route::Agent { dir } => dir.display().to_string(),
        }
    }
}

/// One device and its route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub device: String,
    pub route: Route,
}

/// Tools and limits shared by every push.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Defaults {
    pub ofctl: PathBuf,
    pub python: PathBuf,
    /// The directory holding the `p4client` package.
    pub p4client: PathBuf,
    pub timeout_secs: u64,
}

impl Default for Defaults {
    fn default() -> Defaults {
        Defaults {
            ofctl: PathBuf::from("ovs-ofctl"),
            python: PathBuf::from("python3"),
            p4client: std::env::var_os("NETC_P4CLIENT")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../targets"))
                }),
            timeout_secs: 60,
        }
    }
}

/// Every device netc can reach, sorted by device then route kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inventory {
    pub targets: Vec<Target>,
    pub defaults: Defaults,
}

/// An inventory file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{at}: {message}")]
pub struct InventoryError {
    /// `file:line:column`, or the file alone.
    pub at: String,
    pub message: String,
    pub hint: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDefaults {
    ofctl: Option<String>,
    python: Option<String>,
    p4client: Option<String>,
    timeout_secs: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileP4 {
    address: String,
    #[serde(default = "one")]
    device_id: u64,
    #[serde(default = "one")]
    election_id: u64,
    device_config: Option<Spanned<String>>,
}

fn one() -> u64 {
    1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    defaults: Option<FileDefaults>,
    #[serde(default)]
    ovs: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    p4: BTreeMap<String, Spanned<FileP4>>,
    #[serde(default)]
    agent: BTreeMap<String, Spanned<String>>,
}

const HINT: &str = "an inventory has [ovs] host = \"<ovs-ofctl switch>\", [p4.<switch>] address/device_id, [agent] host = \"<dir>\", and optional [defaults]; see `netc apply --help`";

impl Inventory {
    /// Reads and checks an inventory file (also that every `device_config`
    /// it names can be read: a missing program is found before any push).
    pub fn load(path: &Path) -> Result<Inventory, InventoryError> {
        let text = std::fs::read_to_string(path).map_err(|e| InventoryError {
            at: path.display().to_string(),
            message: format!("cannot read the inventory: {e}"),
            hint: None,
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        Inventory::parse_checked(&text, &path.display().to_string(), base, true)
    }

    /// Parses inventory text; `name` locates errors, `base` anchors relative
    /// paths. Files it names are not opened (a recorded inventory stays
    /// readable when a `device_config` was moved; the push then says so).
    pub fn parse(text: &str, name: &str, base: &Path) -> Result<Inventory, InventoryError> {
        Inventory::parse_checked(text, name, base, false)
    }

    fn parse_checked(
        text: &str,
        name: &str,
        base: &Path,
        check_files: bool,
    ) -> Result<Inventory, InventoryError> {
        let at = |span: Option<std::ops::Range<usize>>| match span {
            Some(s) => {
                let (line, col) = line_col(text, s.start);
                format!("{name}:{line}:{col}")
            }
            None => name.to_string(),
        };
        let file: File = toml::from_str(text).map_err(|e: toml::de::Error| InventoryError {
            at: at(e.span()),
            message: e.message().trim().to_string(),
            hint: Some(HINT.into()),
        })?;
        let mut inv = Inventory::default();
        if let Some(d) = file.defaults {
            if let Some(v) = d.ofctl {
                inv.defaults.ofctl = v.into();
            }
            if let Some(v) = d.python {
                inv.defaults.python = v.into();
            }
            if let Some(v) = d.p4client {
                inv.defaults.p4client = base.join(v);
            }
            if let Some(v) = d.timeout_secs {
                inv.defaults.timeout_secs = v.max(1);
            }
        }
        for (device, bridge) in &file.ovs {
            if let Some(dir) = file.agent.get(device) {
                return Err(InventoryError {
                    at: at(Some(dir.span())),
                    message: format!(
                        "host `{device}` is under both [ovs] and [agent]: two writers of one bridge"
                    ),
                    hint: Some(
                        "list it under [agent] when its agent keeps the bridge, else under [ovs]"
                            .into(),
                    ),
                });
            }
            if bridge.get_ref().trim().is_empty() {
                return Err(InventoryError {
                    at: at(Some(bridge.span())),
                    message: format!("host `{device}`: empty bridge"),
                    hint: Some("give what `ovs-ofctl show` takes: a bridge name or unix:<rundir>/<bridge>.mgmt".into()),
                });
            }
            inv.targets.push(Target {
                device: device.clone(),
                route: Route::Ovs {
                    bridge: bridge.get_ref().clone(),
                },
            });
        }
        for (device, p4) in file.p4 {
            let span = p4.span();
            let p4 = p4.into_inner();
            if !p4.address.contains(':') {
                return Err(InventoryError {
                    at: at(Some(span)),
                    message: format!("switch `{device}`: address `{}` has no port", p4.address),
                    hint: Some("P4Runtime addresses are HOST:PORT, e.g. 127.0.0.1:9559".into()),
                });
            }
            let device_config = match p4.device_config {
                None => None,
                Some(c) => {
                    let path = base.join(c.get_ref());
                    if check_files {
                        if let Err(e) = std::fs::metadata(&path) {
                            return Err(InventoryError {
                                at: at(Some(c.span())),
                                message: format!(
                                    "switch `{device}`: device_config `{}`: {e}",
                                    path.display()
                                ),
                                hint: Some("give the target's compiled netc.p4 (relative paths are relative to the inventory), or leave device_config out to send an empty one".into()),
                            });
                        }
                    }
                    Some(path)
                }
            };
            inv.targets.push(Target {
                device,
                route: Route::P4 {
                    address: p4.address,
                    device_id: p4.device_id,
                    election_id: p4.election_id,
                    device_config,
                },
            });
        }
        for (device, dir) in file.agent {
            inv.targets.push(Target {
                device,
                route: Route::Agent {
                    dir: base.join(dir.into_inner()),
                },
            });
        }
        inv.targets
            .sort_by(|a, b| (&a.device, a.route.kind()).cmp(&(&b.device, b.route.kind())));
        Ok(inv)
    }

    /// An inventory of OVS bridges: host → `ovs-ofctl` switch argument (the local lab's).
    pub fn of_bridges(bridges: &BTreeMap<String, String>) -> Inventory {
        Inventory {
            targets: bridges
                .iter()
                .map(|(device, bridge)| Target {
                    device: device.clone(),
                    route: Route::Ovs {
                        bridge: bridge.clone(),
                    },
                })
                .collect(),
            defaults: Defaults::default(),
        }
    }
}

impl Inventory {
    /// The inventory in its own file syntax, paths absolute: what a
    /// generation records, so `rollback` and `status` reach the same devices.
    pub fn to_toml(&self) -> String {
        let q = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
        let d = &self.defaults;
        let mut out = format!(
            "[defaults]\nofctl = {}\npython = {}\np4client = {}\ntimeout_secs = {}\n",
            q(&d.ofctl.to_string_lossy()),
            q(&d.python.to_string_lossy()),
            q(&absolute(&d.p4client)),
            d.timeout_secs
        );
        let mut ovs = String::new();
        let mut agent = String::new();
        for t in &self.targets {
            match &t.route {
                Route::Ovs { bridge } => {
                    ovs.push_str(&format!("{} = {}\n", q(&t.device), q(bridge)))
                }
                Route::Agent { dir } => {
                    agent.push_str(&format!("{} = {}\n", q(&t.device), q(&absolute(dir))))
                }
                Route::P4 {
                    address,
                    device_id,
                    election_id,
                    device_config,
                } => {
                    out.push_str(&format!(
                        "[p4.{}]\naddress = {}\ndevice_id = {device_id}\nelection_id = {election_id}\n",
                        q(&t.device),
                        q(address)
                    ));
                    if let Some(c) = device_config {
                        out.push_str(&format!("device_config = {}\n", q(&absolute(c))));
                    }
                }
            }
        }
        if !ovs.is_empty() {
            out.push_str("[ovs]\n");
            out.push_str(&ovs);
        }
        if !agent.is_empty() {
            out.push_str("[agent]\n");
            out.push_str(&agent);
        }
        out
    }
}

fn absolute(p: &Path) -> String {
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

/// 1-based line and column (in characters) of byte `offset`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rsplit_once('\n')
        .map_or(before, |(_, l)| l)
        .chars()
        .count()
        + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_route_sorted() {
        let inv = Inventory::parse(
            "[ovs]\nh2 = \"unix:/r/br.mgmt\"\n[p4.tor1]\naddress = \"127.0.0.1:9559\"\ndevice_id = 3\n[agent]\nh1 = \"agents/h1\"\n[defaults]\ntimeout_secs = 5\n",
            "inv.toml",
            Path::new("/etc/netc"),
        )
        .unwrap();
        let got: Vec<(&str, &str)> = inv
            .targets
            .iter()
            .map(|t| (t.device.as_str(), t.route.kind()))
            .collect();
        assert_eq!(got, [("h1", "agent"), ("h2", "ovs"), ("tor1", "p4")]);
        assert_eq!(
            inv.targets[0].route,
            Route::Agent {
                dir: PathBuf::from("/etc/netc/agents/h1")
            }
        );
        assert_eq!(
            inv.targets[2].route,
            Route::P4 {
                address: "127.0.0.1:9559".into(),
                device_id: 3,
                election_id: 1,
                device_config: None,
            }
        );
        assert_eq!(inv.defaults.timeout_secs, 5);
        let again = Inventory::parse(&inv.to_toml(), "recorded", Path::new("/")).unwrap();
        assert_eq!(again, inv);
    }

    #[test]
    fn mistakes_are_located() {
        let bad = |text: &str| Inventory::parse(text, "inv.toml", Path::new(".")).unwrap_err();
        let e = bad("[ovs]\nh1 = 7\n");
        assert!(e.at.starts_with("inv.toml:2:"), "{e}");
        let e = bad("[ovs]\nh1 = \"br\"\n[agent]\nh1 = \"d\"\n");
        assert_eq!(e.at, "inv.toml:4:6");
        assert!(e.message.contains("two writers"));
        let e = bad("[p4.tor1]\naddres = \"x:1\"\n");
        assert!(e.at.starts_with("inv.toml:"), "{e}");
        assert!(e.message.contains("addres"), "{e}");
        let e = bad("[p4.tor1]\naddress = \"nowhere\"\n");
        assert!(e.message.contains("no port"));
        let e = bad("[ovs\n");
        assert!(e.at.starts_with("inv.toml:1:"), "{e}");
    }

    #[test]
    fn device_config_is_anchored_recorded_absolute_and_checked_on_load() {
        let dir = std::env::temp_dir().join(format!("netc-inv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("netc.bin"), b"program").unwrap();
        let text = "[p4.tor1]\naddress = \"127.0.0.1:9559\"\ndevice_config = \"netc.bin\"\n";
        std::fs::write(dir.join("inv.toml"), text).unwrap();
        let inv = Inventory::load(&dir.join("inv.toml")).unwrap();
        let Route::P4 { device_config, .. } = &inv.targets[0].route else {
            panic!("not a P4 route: {:?}", inv.targets[0].route);
        };
        assert_eq!(
            device_config.as_deref(),
            Some(dir.join("netc.bin").as_path())
        );
        // what a generation records reads back the same, from anywhere
        let again = Inventory::parse(&inv.to_toml(), "recorded", Path::new("/")).unwrap();
        assert_eq!(again, inv);

        std::fs::remove_file(dir.join("netc.bin")).unwrap();
        let e = Inventory::load(&dir.join("inv.toml")).unwrap_err();
        assert!(e.at.ends_with("inv.toml:3:17"), "{e}");
        assert!(
            e.message.contains("tor1") && e.message.contains("netc.bin"),
            "{e}"
        );
        assert!(e.hint.is_some());
        // a recorded inventory is not checked: the push reports a missing program
        assert!(Inventory::parse(&inv.to_toml(), "recorded", Path::new("/")).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
