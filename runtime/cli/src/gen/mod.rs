//! `netc gen`: a deterministic, seeded generator of intent scenarios.
//!
//! Expects [`Params`] (a preset, [`Params::preset`], with knobs overridden).
//! Guarantees:
//! - the output is facts of the intent schema only (rules/schema.ndl,
//!   specs/intent.md), every relation with all its columns;
//! - the scenario is *valid* intent: the standard rules derive no `error_*`
//!   row (tested on many seeds in `tests.rs`);
//! - the same seed and knobs give the same bytes on every run and machine:
//!   integer-only random draws ([`rng`]), one random stream per concern, no
//!   hash-map iteration anywhere in the model or the writer;
//! - the counts a knob names are exact (VMs = tenants × VMs per tenant, …);
//!   derived counts (DIPs, SNAT ranges, …) are reported in [`Counts`].
//!
//! Reading order: [`rng`] → [`topology`] (fat tree, hosts, SMuxes,
//! Hoverboards) → [`tenants`] (tenants, vnets, subnets, VMs) → [`services`]
//! (VIPs, DIP pools, SNAT, placement traffic) → [`policy`] (ACLs, multicast,
//! Anolis NF clusters, flow usage) → [`writer`] (the `.ndl` text). The knobs,
//! distributions and presets are documented in docs/gen.md.

pub mod policy;
pub mod rng;
pub mod services;
pub mod tenants;
pub mod topology;
pub mod writer;

#[cfg(test)]
mod tests;

/// The scenario sizes of issue 8's benchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// 1,000 VMs on 100 hosts, 100 tenants, 300 VIPs.
    S,
    /// 10,000 VMs on 1,000 hosts, 1,000 tenants, 3,000 VIPs.
    M,
    /// Andromeda scale: 100,000 VMs on 10,000 hosts, 10,000 tenants, 30,000 VIPs.
    L,
}

impl std::str::FromStr for Preset {
    type Err = String;
    fn from_str(s: &str) -> Result<Preset, String> {
        match s {
            "S" | "s" => Ok(Preset::S),
            "M" | "m" => Ok(Preset::M),
            "L" | "l" => Ok(Preset::L),
            _ => Err(format!("unknown preset `{s}` (expected S, M or L)")),
        }
    }
}

/// Every knob of the generator (docs/gen.md explains each).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    pub seed: u64,
    /// Fat-tree arity: k pods of k/2 ToRs and k/2 aggs, (k/2)² cores.
    pub k: u32,
    /// Hosts, spread round-robin over the ToRs.
    pub hosts: u32,
    pub tenants: u32,
    pub vms_per_tenant: u32,
    pub vnets_per_tenant: u32,
    /// Percentage of a tenant's VMs placed in its home pod (the rest anywhere).
    pub locality_pct: u32,
    /// VIP endpoints (one address each).
    pub vips: u32,
    /// Cap of a VIP's DIP count (also capped by its tenant's VM count).
    pub max_dips: u32,
    pub acls_per_tenant: u32,
    pub mcast_groups: u32,
    /// Anolis clusters (consistent-hash rings of NF load balancers).
    pub nf_chains: u32,
    pub smuxes: u32,
    pub hoverboards: u32,
    /// Percentage of tenants with vnet_model "hoverboard".
    pub hoverboard_pct: u32,
    /// Percentage of tenants with a SNAT VIP and port grants.
    pub snat_pct: u32,
    /// flow_usage reports (VM pairs).
    pub flows: u32,
}

impl Params {
    pub fn preset(p: Preset) -> Params {
        let (k, hosts, tenants, vips, mcast, nf, flows) = match p {
            Preset::S => (4, 100, 100, 300, 10, 2, 1_000),
            Preset::M => (8, 1_000, 1_000, 3_000, 100, 4, 10_000),
            Preset::L => (20, 10_000, 10_000, 30_000, 1_000, 8, 100_000),
        };
        Params {
            seed: 1,
            k,
            hosts,
            tenants,
            vms_per_tenant: 10,
            vnets_per_tenant: 1,
            locality_pct: 90,
            vips,
            max_dips: 512,
            acls_per_tenant: 4,
            mcast_groups: mcast,
            nf_chains: nf,
            smuxes: 2,
            hoverboards: 2,
            hoverboard_pct: 50,
            snat_pct: 20,
            flows,
        }
    }

    /// The ToR count of the fat tree.
    pub fn tors(&self) -> u32 {
        self.k * (self.k / 2)
    }

    /// Rejects knobs the generator cannot honour, naming the knob.
    pub fn validate(&self) -> Result<(), GenError> {
        let bad = |knob: &'static str, value: u64, expected: &str| {
            Err(GenError::BadKnob {
                knob,
                value,
                expected: expected.to_string(),
            })
        };
        if self.k < 2 || self.k > 64 || !self.k.is_multiple_of(2) {
            return bad("--k", self.k.into(), "an even number from 2 to 64");
        }
        if self.hosts < 1 || self.hosts > self.tors() * 250 {
            return bad(
                "--hosts",
                self.hosts.into(),
                &format!(
                    "1 to {} (250 per ToR; k={} has {} ToRs)",
                    self.tors() * 250,
                    self.k,
                    self.tors()
                ),
            );
        }
        if self.tenants > 1_000_000 {
            return bad("--tenants", self.tenants.into(), "at most 1,000,000");
        }
        if self.vnets_per_tenant < 1 || self.vnets_per_tenant > 16 {
            return bad(
                "--vnets-per-tenant",
                self.vnets_per_tenant.into(),
                "1 to 16",
            );
        }
        if self.vms_per_tenant > 60_000 {
            return bad(
                "--vms-per-tenant",
                self.vms_per_tenant.into(),
                "at most 60,000 (a vnet is a /16 of /24 subnets)",
            );
        }
        let vms = u64::from(self.tenants) * u64::from(self.vms_per_tenant);
        if vms > 4_000_000 {
            return bad("--tenants × --vms-per-tenant", vms, "at most 4,000,000 VMs");
        }
        if self.locality_pct > 100 {
            return bad("--locality-pct", self.locality_pct.into(), "0 to 100");
        }
        if self.vips > 2_000_000 {
            return bad("--vips", self.vips.into(), "at most 2,000,000");
        }
        if self.vips > 0 && (self.tenants == 0 || self.vms_per_tenant == 0) {
            return bad("--vips", self.vips.into(), "0 when there are no VMs");
        }
        if self.max_dips < 1 || self.max_dips > 32_768 {
            return bad("--max-dips", self.max_dips.into(), "1 to 32,768");
        }
        if self.acls_per_tenant > 2_990 {
            return bad(
                "--acls-per-tenant",
                self.acls_per_tenant.into(),
                "at most 2,990",
            );
        }
        if self.mcast_groups > 0 && (self.tenants == 0 || self.vms_per_tenant == 0) {
            return bad(
                "--mcast-groups",
                self.mcast_groups.into(),
                "0 when there are no VMs",
            );
        }
        if self.mcast_groups > self.tenants.saturating_mul(65_000) {
            return bad(
                "--mcast-groups",
                self.mcast_groups.into(),
                "at most 65,000 per tenant",
            );
        }
        if self.nf_chains > 255 {
            return bad("--nf-chains", self.nf_chains.into(), "at most 255");
        }
        if self.smuxes > 250 {
            return bad("--smuxes", self.smuxes.into(), "at most 250");
        }
        if self.hoverboards > 250 {
            return bad("--hoverboards", self.hoverboards.into(), "at most 250");
        }
        if self.hoverboard_pct > 100 || (self.hoverboard_pct > 0 && self.hoverboards == 0) {
            return bad(
                "--hoverboard-pct",
                self.hoverboard_pct.into(),
                "0 to 100, and 0 when --hoverboards is 0 (Hoverboard tenants need a gateway)",
            );
        }
        if self.snat_pct > 100 {
            return bad("--snat-pct", self.snat_pct.into(), "0 to 100");
        }
        let v = u64::from(self.vms_per_tenant);
        let pairs = u64::from(self.tenants) * v * v.saturating_sub(1);
        if u64::from(self.flows) > pairs {
            return bad(
                "--flows",
                self.flows.into(),
                &format!("at most {pairs} (distinct ordered VM pairs within tenants)"),
            );
        }
        Ok(())
    }
}

/// A knob out of range, or the output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum GenError {
    #[error("{knob} = {value} is out of range: expected {expected}")]
    BadKnob {
        knob: &'static str,
        value: u64,
        expected: String,
    },
    #[error("cannot write `{path}`: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// The generated network, as data; [`writer`] renders it.
#[derive(Debug)]
pub struct Scenario {
    pub params: Params,
    pub topo: topology::Topology,
    pub tenants: tenants::Tenants,
    pub services: services::Services,
    pub policy: policy::Policy,
}

/// What a scenario holds (the summary line of `netc gen`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub switches: usize,
    pub links: usize,
    pub hosts: usize,
    pub tenants: usize,
    pub vms: usize,
    pub vips: usize,
    pub dips: usize,
    pub two_level_vips: usize,
    pub snat_ranges: usize,
    pub acls: usize,
    pub mcast_groups: usize,
    pub mcast_members: usize,
    pub nf_chains: usize,
    pub flows: usize,
}

/// Builds the scenario the knobs describe.
pub fn generate(params: &Params) -> Result<Scenario, GenError> {
    params.validate()?;
    let topo = topology::build(params);
    let tenants = tenants::build(params, &topo);
    let services = services::build(params, &topo, &tenants);
    let policy = policy::build(params, &topo, &tenants);
    Ok(Scenario {
        params: params.clone(),
        topo,
        tenants,
        services,
        policy,
    })
}

impl Scenario {
    pub fn counts(&self) -> Counts {
        Counts {
            switches: self.topo.switches.len(),
            links: self.topo.links.len(),
            hosts: self.topo.hosts.len(),
            tenants: self.tenants.tenants.len(),
            vms: self.tenants.vms.len(),
            vips: self.services.vips.len(),
            dips: self.services.vips.iter().map(|v| v.dips.len()).sum(),
            two_level_vips: self
                .services
                .vips
                .iter()
                .filter(|v| v.tip_range.is_some())
                .count(),
            snat_ranges: self.services.snat.iter().map(|s| s.ranges.len()).sum(),
            acls: self.policy.acls.len(),
            mcast_groups: self.policy.groups.len(),
            mcast_members: self.policy.groups.iter().map(|g| g.members.len()).sum(),
            nf_chains: self.policy.clusters.len(),
            flows: self.policy.flows.len(),
        }
    }
}
