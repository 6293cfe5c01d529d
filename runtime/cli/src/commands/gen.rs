//! `netc gen --preset S|M|L [--seed N] [knobs] --out FILE|DIR`: writes a
//! generated intent scenario (crate::gen).
//!
//! Expects the preset and any knob overrides from the command line.
//! Guarantees: bad knobs are a usage error (exit 2) naming the knob, and
//! nothing is written; otherwise the scenario is written atomically — one
//! file, one file per section when `--out` is a directory (existing, or
//! ending in `/`), or stdout for `-` — and one summary line goes to stderr.

use super::{output, Outcome};
use crate::gen::{self, writer, GenError, Params, Preset};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// Knobs given on the command line; `None` keeps the preset's value.
#[derive(Debug, Default, clap::Args)]
pub struct Knobs {
    /// Random seed (default 1).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Fat-tree arity: k pods of k/2 ToRs + k/2 aggs, (k/2)^2 cores (even, 2..64).
    #[arg(long)]
    pub k: Option<u32>,
    /// Hosts, spread round-robin over the k^2/2 ToRs.
    #[arg(long, conflicts_with = "hosts_per_tor")]
    pub hosts: Option<u32>,
    /// Hosts per ToR (sets --hosts to this times the ToR count).
    #[arg(long)]
    pub hosts_per_tor: Option<u32>,
    /// Tenants (one VNI each).
    #[arg(long)]
    pub tenants: Option<u32>,
    /// VMs of every tenant (exact).
    #[arg(long)]
    pub vms_per_tenant: Option<u32>,
    /// Vnets (/16 address spaces) per tenant.
    #[arg(long)]
    pub vnets_per_tenant: Option<u32>,
    /// % of a tenant's VMs placed in its home pod.
    #[arg(long)]
    pub locality_pct: Option<u32>,
    /// VIP endpoints (DIP counts follow Zipf's law).
    #[arg(long)]
    pub vips: Option<u32>,
    /// Cap of a VIP's DIP count (> 512 gets a TIP range).
    #[arg(long)]
    pub max_dips: Option<u32>,
    /// ACL rules per tenant.
    #[arg(long)]
    pub acls_per_tenant: Option<u32>,
    /// Multicast groups (over random tenants).
    #[arg(long)]
    pub mcast_groups: Option<u32>,
    /// Anolis NF clusters (consistent-hash chains).
    #[arg(long)]
    pub nf_chains: Option<u32>,
    /// Software Muxes.
    #[arg(long)]
    pub smuxes: Option<u32>,
    /// Hoverboard gateways.
    #[arg(long)]
    pub hoverboards: Option<u32>,
    /// % of tenants on the Hoverboard model.
    #[arg(long)]
    pub hoverboard_pct: Option<u32>,
    /// % of tenants with a SNAT VIP and 8-port grants.
    #[arg(long)]
    pub snat_pct: Option<u32>,
    /// flow_usage reports (distinct VM pairs; Pareto usage).
    #[arg(long)]
    pub flows: Option<u32>,
}

/// The preset with the knobs applied (`--hosts-per-tor` wins over `--hosts`).
pub fn params(preset: Preset, k: &Knobs) -> Params {
    let mut p = Params::preset(preset);
    macro_rules! set {
        ($($f:ident),*) => { $( if let Some(v) = k.$f { p.$f = v; } )* };
    }
    set!(
        seed,
        k,
        hosts,
        tenants,
        vms_per_tenant,
        vnets_per_tenant,
        locality_pct,
        vips,
        max_dips,
        acls_per_tenant,
        mcast_groups,
        nf_chains,
        smuxes,
        hoverboards,
        hoverboard_pct,
        snat_pct,
        flows
    );
    if let Some(h) = k.hosts_per_tor {
        p.hosts = h.saturating_mul(p.tors());
    }
    p
}

pub fn run(preset: Preset, knobs: &Knobs, out: &Path) -> Outcome {
    let start = Instant::now();
    let p = params(preset, knobs);
    let scenario = match gen::generate(&p) {
        Ok(s) => s,
        Err(e) => {
            return Outcome::InputError(
                e.to_string(),
                Some("see `netc gen --help` and docs/gen.md for what each knob means".into()),
            )
        }
    };
    let to_stdout = out.as_os_str() == "-";
    if to_stdout && output::json() {
        return Outcome::InputError(
            "--json and --out - both want stdout".into(),
            Some(
                "write the facts to a FILE or DIR with --out, and the counts go to stdout as JSON"
                    .into(),
            ),
        );
    }
    let as_dir = !to_stdout && (out.is_dir() || out.to_string_lossy().ends_with('/'));
    let written = if to_stdout {
        let stdout = std::io::stdout();
        let mut w = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
        writer::write_all(&scenario, &mut w)
            .and_then(|_| w.flush())
            .map(|_| None)
            .map_err(|source| GenError::Io {
                path: "-".into(),
                source,
            })
    } else if as_dir {
        writer::write_dir(&scenario, out).map(Some)
    } else {
        writer::write_file(&scenario, out).map(Some)
    };
    let written = match written {
        Ok(w) => w,
        Err(e) => {
            return Outcome::InputError(
                e.to_string(),
                Some("check that the --out path's directory is writable".into()),
            )
        }
    };
    let c = scenario.counts();
    let place = match &written {
        None => "stdout".to_string(),
        Some(w) if as_dir => format!(
            "{} ({} files, {} bytes)",
            out.display(),
            w.files.len(),
            w.bytes
        ),
        Some(w) => format!("{} ({} bytes)", out.display(), w.bytes),
    };
    if output::json() {
        output::emit(serde_json::json!({
            "out": out,
            "files": written.as_ref().map(|w| w.files.len()),
            "bytes": written.as_ref().map(|w| w.bytes),
            "seed": p.seed,
            "k": p.k,
            "counts": {
                "vms": c.vms, "hosts": c.hosts, "switches": c.switches, "links": c.links,
                "tenants": c.tenants, "vips": c.vips, "dips": c.dips, "two_level_vips": c.two_level_vips,
                "snat_ranges": c.snat_ranges, "acls": c.acls, "mcast_groups": c.mcast_groups,
                "mcast_members": c.mcast_members, "nf_chains": c.nf_chains, "flows": c.flows,
            },
        }));
    }
    eprintln!(
        "wrote {place}: {} VMs on {} hosts (fat tree k={}: {} switches, {} links), {} tenants, \
{} VIPs with {} DIPs ({} two-level), {} SNAT ranges, {} ACL rules, {} multicast groups ({} members), \
{} NF clusters, {} flows; seed {} in {:.2} s",
        c.vms,
        c.hosts,
        p.k,
        c.switches,
        c.links,
        c.tenants,
        c.vips,
        c.dips,
        c.two_level_vips,
        c.snat_ranges,
        c.acls,
        c.mcast_groups,
        c.mcast_members,
        c.nf_chains,
        c.flows,
        p.seed,
        start.elapsed().as_secs_f64()
    );
    Outcome::Ok
}
