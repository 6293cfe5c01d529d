//! OVS target (in progress): `ovs_flow`/`ovs_group` rows → ovs-ofctl files.

use crate::{Artifact, DeviceRows, RenderError, Renderer};

pub struct OvsRenderer;

impl Renderer for OvsRenderer {
    fn name(&self) -> &'static str {
        "ovs"
    }
    fn consumes(&self, relation: &str) -> bool {
        relation.starts_with("ovs_")
    }
    fn render(&self, _device: &str, _rows: &DeviceRows) -> Result<Vec<Artifact>, RenderError> {
        Ok(Vec::new())
    }
}
