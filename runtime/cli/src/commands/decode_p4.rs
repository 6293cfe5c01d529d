//! `netc decode-p4 FILE`: the verifier's reading of a P4Runtime WriteRequest
//! (`DIR/p4/<switch>.txtpb`), as JSON.
//!
//! Why: the verifier models each switch from the text it will receive
//! (`netc_verify::p4`), so its reader must decode exactly what the official
//! protobuf runtime decodes; this prints that reading (P4Runtime field
//! names, only fields that are set, bytes as hex) so a test can compare it
//! field for field with `google.protobuf.text_format` + the `p4runtime`
//! classes. Exit 0 printed; 2 the file does not read or does not fit
//! `p4/netc.p4info.txtpb` (the error names file:line:col).

use super::Outcome;
use std::path::Path;

pub fn run(file: &Path) -> Outcome {
    match netc_verify::p4::decode_file(file) {
        Ok(updates) => {
            super::output::emit(netc_verify::p4::to_json(&updates));
            Outcome::Ok
        }
        Err(e) => Outcome::InputError(format!("{}: {}", e.at, e.message), e.hint),
    }
}
