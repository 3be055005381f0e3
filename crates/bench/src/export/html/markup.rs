//! The page's markup below every section: the shell (one inline style
//! sheet, no script, no font), escaping, durations as rtrec prints them,
//! and the cells the tables share.

/// The one style sheet; each plot element's class (`box`, `bar`, `point`,
/// `whisker`) is styled here and counted by the browser test.
const CSS: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}\
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}\
th{background:#f4f4f4}td.l,th.l{text-align:left}.warn{color:#a60}.fail{color:#b00}\
svg{display:block;margin:.5em 0;background:#fff}svg text{font:11px sans-serif;fill:#333}\
.box{fill:#9ecae1;stroke:#3182bd}.pub{stroke:#d62728;fill:none;stroke-width:2}.whisker{stroke:#555}\
.median{stroke:#08306b;stroke-width:2}.bar{fill:#6baed6}.point{fill:#3182bd}.flush{stroke:#aaa;stroke-dasharray:2 3}\
.load{fill:#fdd0a2;opacity:.5}.grid{stroke:#eee}.max{stroke:#000;stroke-width:2}pre{background:#f8f8f8;padding:.5em;overflow:auto}\
.cap{color:#555;font-size:12px}";

/// Escapes `s` for HTML text and attributes.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A duration as every duration in rtrec prints (`12.5 µs`).
pub fn dur(ns: u64) -> String {
    rtrec_units::format_duration(ns)
}

/// The whole page: its `title`, the style sheet and `body`.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{CSS}</style></head><body>\n{body}\n</body></html>\n",
        esc(title)
    )
}

/// A published figure (whole µs) as a duration; `–` when not published.
pub fn us_opt(v: Option<u64>) -> String {
    v.map_or("–".into(), |u| dur(u * 1000))
}

/// A row of a table of names and values (the environment, a recording's
/// summary), both escaped.
pub fn name_value_row(name: &str, value: &str) -> String {
    format!(
        r#"<tr><th class="l">{}</th><td class="l">{}</td></tr>"#,
        esc(name),
        esc(value)
    )
}

/// A cell of a table: `failed: why` across `span` columns when there is
/// an error, else nothing.
pub fn failed_cell(error: Option<&str>, span: usize) -> Option<String> {
    error.map(|e| {
        format!(
            r#"<td class="l fail" colspan="{span}">failed: {}</td>"#,
            esc(e)
        )
    })
}
