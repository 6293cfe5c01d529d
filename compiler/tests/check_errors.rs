//! Diagnostic fixtures of the checker.
//!
//! Every `tests/errors/<stage>/<name>.dl` (stages `resolve`, `types`,
//! `stratify`, `warnings`) is parsed and checked; the rendered
//! diagnostics must equal `<name>.expected` byte for byte. A fixture whose
//! name starts with a code (`E0101_...`, `W0002_...`) must produce that code.
//! The program is named `<stage>/<name>.dl` in the output, so the expected
//! files do not depend on where the repository lives.
//!
//! Regenerate the expected files with `UPDATE_EXPECT=1 cargo test --test check_errors`.

use netc_compiler::{check, diagnostics::Diagnostics, source::SourceMap, syntax};
use std::path::Path;

fn render(stage: &str, name: &str, text: &str) -> (String, bool) {
    let mut sources = SourceMap::new();
    let mut diags = Diagnostics::new();
    let mut program = syntax::parse_text(
        &mut sources,
        &format!("{stage}/{name}.dl"),
        text,
        &mut diags,
    );
    let parse_errors = diags.error_count();
    // as the pipeline does: components and eqrel are expanded before checking
    syntax::expand(&mut program, &mut diags);
    let expand_errors = diags.error_count() - parse_errors;
    let checked = check::check(&program, &mut diags);
    if let Some(c) = &checked {
        // An accepted program must also lower cleanly.
        netc_compiler::lower::try_lower(c).unwrap_or_else(|e| panic!("{stage}/{name}: {e}"));
    }
    assert!(
        (checked.is_some() && expand_errors == 0) != diags.has_errors(),
        "{stage}/{name}: check() result disagrees with the diagnostics"
    );
    assert_eq!(
        parse_errors,
        0,
        "{stage}/{name}: the fixture has syntax errors:\n{}",
        diags.render_all(&sources)
    );
    (diags.render_all(&sources), checked.is_some())
}

#[test]
fn error_fixtures() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/errors");
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut failures = Vec::new();
    let mut count = 0;
    // The checker's stages (`syntax/` belongs to the parser's own harness).
    for stage in ["resolve", "types", "stratify", "warnings"] {
        let stage_dir = root.join(stage);
        let mut files: Vec<_> = std::fs::read_dir(&stage_dir)
            .expect("readable")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "dl"))
            .collect();
        files.sort();
        for path in files {
            count += 1;
            let name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_string();
            let text = std::fs::read_to_string(&path).expect("readable fixture");
            let (rendered, _) = render(stage, &name, &text);
            let code = name.split('_').next().unwrap_or_default();
            if code.len() == 5
                && (code.starts_with('E') || code.starts_with('W'))
                && !rendered.contains(&format!("[{code}]"))
            {
                failures.push(format!(
                    "{stage}/{name}: expected a {code} diagnostic, got:\n{rendered}"
                ));
            }
            let expected_path = path.with_extension("expected");
            if update {
                std::fs::write(&expected_path, &rendered).expect("writable");
                continue;
            }
            match std::fs::read_to_string(&expected_path) {
                Ok(expected) if expected == rendered => {}
                Ok(expected) => failures.push(format!("{stage}/{name}: output differs\n--- expected\n{expected}\n--- actual\n{rendered}")),
                Err(_) => failures.push(format!("{stage}/{name}: missing {}; run with UPDATE_EXPECT=1", expected_path.display())),
            }
        }
    }
    assert!(count > 0, "no fixtures found under {}", root.display());
    assert!(
        failures.is_empty(),
        "{} fixture(s) failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
