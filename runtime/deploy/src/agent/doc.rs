//! The host agent's config document (`DIR/host/<host>.json`, written by
//! `netc compile`; schema in specs/host-agent.md) — the parts the agent acts
//! on.
//!
//! Expects: a document with `"schema": "netc-host-agent/1"`. Guarantees: a
//! missing file is an empty document (the host has nothing to probe); a
//! document that is not valid JSON, has another schema tag or a malformed
//! probe is a [`DocError`] naming the file and the probe.

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// One DIP endpoint to probe (`agent_probe`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
pub struct Probe {
    pub tenant: String,
    pub vm: String,
    pub dip: std::net::Ipv4Addr,
    pub proto: i64,
    pub target_port: u16,
}

/// The document, as far as the agent needs it.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct HostDoc {
    #[serde(default)]
    pub schema: String,
    #[serde(default)]
    pub host: String,
    #[serde(default)]
    pub probes: Vec<Probe>,
}

#[derive(Debug, thiserror::Error)]
pub enum DocError {
    #[error("{path}: {message}")]
    Bad { path: PathBuf, message: String },
}

/// Reads the document; a missing file is an empty document.
pub fn load(path: &Path) -> Result<HostDoc, DocError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HostDoc::default()),
        Err(e) => {
            return Err(DocError::Bad {
                path: path.into(),
                message: e.to_string(),
            })
        }
    };
    let doc: HostDoc = serde_json::from_str(&text).map_err(|e| DocError::Bad {
        path: path.into(),
        message: format!("line {}, column {}: {e}", e.line(), e.column()),
    })?;
    if doc.schema != crate::agent::SCHEMA {
        return Err(DocError::Bad {
            path: path.into(),
            message: format!(
                "schema is `{}`, expected `{}` (written by a different netc?)",
                doc.schema,
                crate::agent::SCHEMA
            ),
        });
    }
    Ok(doc)
}
