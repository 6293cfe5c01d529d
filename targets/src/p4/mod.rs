//! P4 target (in progress): `p4_*` rows → P4Runtime WriteRequests.

use crate::{Artifact, DeviceRows, RenderError, Renderer};

#[derive(Default)]
pub struct P4Renderer;

impl Renderer for P4Renderer {
    fn name(&self) -> &'static str {
        "p4"
    }
    fn consumes(&self, relation: &str) -> bool {
        relation.starts_with("p4_")
    }
    fn render(&self, _device: &str, _rows: &DeviceRows) -> Result<Vec<Artifact>, RenderError> {
        Ok(Vec::new())
    }
}
