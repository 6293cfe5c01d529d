//! DIP health probes: TCP connect with a deadline, and up/down hysteresis.
//!
//! Expects: probes from the config document. Guarantees: a probe is `up`
//! until `fall` consecutive failed connects make it `down`, and `down` until
//! `rise` consecutive successes make it `up` again; every connect attempt is
//! bounded by `timeout`. Only TCP (proto 6) endpoints are connect-probed;
//! others are reported up (there is no connectionless health check here).

use super::doc::Probe;
use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Probe settings.
#[derive(Clone, Copy, Debug)]
pub struct ProbeSettings {
    pub timeout: Duration,
    /// Consecutive failures before `down`.
    pub fall: u32,
    /// Consecutive successes before `up`.
    pub rise: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Up,
    Down,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Up => "up",
            Status::Down => "down",
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct State {
    status: Status,
    streak: u32,
}

/// The health of every probed endpoint.
#[derive(Debug, Default)]
pub struct Health {
    states: BTreeMap<Probe, State>,
}

/// One connect attempt.
pub fn connect(p: &Probe, timeout: Duration) -> bool {
    if p.proto != 6 {
        return true;
    }
    let addr = SocketAddr::from((p.dip, p.target_port));
    TcpStream::connect_timeout(&addr, timeout).is_ok()
}

impl Health {
    /// Probes every endpoint once; keeps state only for `probes`. Returns
    /// true if some status changed (or the set of probes changed).
    pub fn round(&mut self, probes: &[Probe], s: ProbeSettings) -> bool {
        let mut changed = self.states.len() != probes.len()
            || probes.iter().any(|p| !self.states.contains_key(p));
        self.states.retain(|p, _| probes.contains(p));
        for p in probes {
            let ok = connect(p, s.timeout);
            let st = self.states.entry(p.clone()).or_insert(State {
                status: Status::Up,
                streak: 0,
            });
            let (agrees, threshold, flip) = match st.status {
                Status::Up => (ok, s.fall, Status::Down),
                Status::Down => (!ok, s.rise, Status::Up),
            };
            if agrees {
                st.streak = 0;
            } else {
                st.streak += 1;
                if st.streak >= threshold.max(1) {
                    st.status = flip;
                    st.streak = 0;
                    changed = true;
                }
            }
        }
        changed
    }

    /// (probe, status), sorted.
    pub fn statuses(&self) -> Vec<(&Probe, Status)> {
        self.states.iter().map(|(p, s)| (p, s.status)).collect()
    }
}
