//! Host-agent target (in progress): `agent_*` rows → config documents.

use crate::{Artifact, DeviceRows, RenderError, Renderer};

pub struct HostRenderer;

impl Renderer for HostRenderer {
    fn name(&self) -> &'static str {
        "host"
    }
    fn consumes(&self, relation: &str) -> bool {
        relation.starts_with("agent_")
    }
    fn render(&self, _device: &str, _rows: &DeviceRows) -> Result<Vec<Artifact>, RenderError> {
        Ok(Vec::new())
    }
}
