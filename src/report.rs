//! `rtrec report RESULT.json -o report.html`: one self-contained HTML page
//! (inline CSS and SVG, no script, no network) from a `rtrec bench --json`
//! result or a `rtrec record --json` summary. The page is drawn by
//! `rtrec_bench::export::html`; this module reads, tells the two kinds
//! apart and writes.
//!
//! Design choice: the kind is told by content, not by name: a bench result
//! has `schema_version` and `cases` (and its version is checked), anything
//! else that is a JSON object is read as a recording summary.

use std::io::Write;

use rtrec_bench::export::html;

use crate::cli::ReportArgs;
use crate::error::{usage, Context};

/// Runs `rtrec report`.
pub fn run(a: &ReportArgs) -> crate::error::Result<i32> {
    let bytes = if a.input.as_os_str() == "-" {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut v).context("reading stdin")?;
        v
    } else {
        std::fs::read(&a.input).context(format!("reading '{}'", a.input.display()))?
    };
    let v: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        _ => {
            return usage(format!(
                "'{}' is not the JSON of `rtrec bench --json` or `rtrec record --json`",
                a.input.display()
            ))
        }
    };
    let bench = v.get("schema_version").is_some() && v.get("cases").is_some();
    let page = if bench {
        let r = rtrec_bench::read_report_bytes(&a.input, &bytes)?;
        if a.box_plot {
            html::box_plot_svg(&r)
        } else {
            html::render(&r)
        }
    } else if a.box_plot {
        return usage(
            "--box-plot draws a bench result (rtrec bench --json); this is a recording summary",
        );
    } else {
        html::render_summary(&v)
    };
    if a.output.as_os_str() == "-" {
        std::io::stdout().lock().write_all(page.as_bytes())?;
    } else {
        rtrec_sys::write_atomic(&a.output, page.as_bytes(), 0o644)
            .context(format!("writing '{}'", a.output.display()))?;
    }
    Ok(0)
}
