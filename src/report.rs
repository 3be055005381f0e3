//! `rtrec report RESULT.json -o report.html`: one self-contained HTML page
//! (inline CSS and SVG, no script, no network) from a `rtrec bench --json`
//! result or a `rtrec record --json` summary. The page is drawn by
//! `rtrec_bench::export::html`; this module reads, tells the two kinds
//! apart and writes.
//!
//! Design choice: the kind is told by the document's own tag, not by its
//! other keys: a recording's result says `"kind": "record"` and is read as
//! `rtrec_engine::result::RecordResult`; a document with a
//! `schema_version` and no `kind` is a bench result (its version checked);
//! one with neither is a recording summary from before the versioned
//! schema (version 0), read as a `RecordResult` too.

use std::io::Write;

use rtrec_bench::export::html;
use rtrec_engine::result::RecordResult;

use crate::cli::ReportArgs;
use crate::error::{usage, Context};

/// The tags of a result document: what it is, and which version.
#[derive(serde::Deserialize)]
struct Tag {
    kind: Option<String>,
    schema_version: Option<u32>,
}

/// Runs `rtrec report`.
pub fn run(a: &ReportArgs) -> crate::error::Result<i32> {
    let bytes = if a.input.as_os_str() == "-" {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut v).context("reading stdin")?;
        v
    } else {
        std::fs::read(&a.input).context(format!("reading '{}'", a.input.display()))?
    };
    let not_ours = || {
        usage(format!(
            "'{}' is not the JSON of `rtrec bench --json` or `rtrec record --json`",
            a.input.display()
        ))
    };
    let Ok(tag) = serde_json::from_slice::<Tag>(&bytes) else {
        return not_ours();
    };
    let page = match (tag.kind.as_deref(), tag.schema_version) {
        (None, Some(_)) => {
            let r = rtrec_bench::read_report_bytes(&a.input, &bytes)?;
            if a.box_plot {
                html::box_plot_svg(&r)
            } else {
                html::render(&r)
            }
        }
        (Some("record") | None, _) if a.box_plot => return usage(
            "--box-plot draws a bench result (rtrec bench --json); this is a recording's result",
        ),
        (Some("record") | None, _) => match RecordResult::from_json(&bytes) {
            Ok(r) => html::render_summary(&r),
            Err(why) => return usage(format!("'{}' is {why}", a.input.display())),
        },
        (Some(other), _) => {
            return usage(format!(
                "'{}' is a result of kind '{other}', which this rtrec does not know",
                a.input.display()
            ))
        }
    };
    if a.output.as_os_str() == "-" {
        std::io::stdout().lock().write_all(page.as_bytes())?;
    } else {
        rtrec_sys::write_atomic(&a.output, page.as_bytes(), 0o644)
            .context(format!("writing '{}'", a.output.display()))?;
    }
    Ok(0)
}
