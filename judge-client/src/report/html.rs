//! The pieces every suite's `report.html` is built from: one self-contained page (inline CSS and
//! SVG, no script, nothing fetched), its stylesheet, percentages and escaping.

pub use super::escape::escape;

/// The report pages' shared stylesheet (the LTM, `judge apps` and `judge sim` reports).
pub const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1000px;color:#222}
h1{margin-bottom:.2em}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}
.big{font-size:2.4em;font-weight:bold}.passed{color:#17803d}.failed{color:#b42318}.error{color:#a15c07}.not_applicable,.not_gradable{color:#777}
details{border:1px solid #ddd;border-radius:6px;margin:.4em 0;padding:.4em .8em}summary{cursor:pointer}
.turn{margin:.4em 0;padding:.4em .6em;border-radius:6px;white-space:pre-wrap}.user{background:#eef4ff}.assistant{background:#f3f3f3}
.event{color:#555;font-style:italic;margin:.3em 0}.meta{color:#666;font-size:.85em}.fail{background:#fdecea}
.warn{background:#fff4e5;border-left:4px solid #e8a33d;padding:.5em .8em}";

pub fn pct(value: Option<f64>) -> String {
    value.map_or("–".to_owned(), |v| format!("{:.0}%", v * 100.0))
}

/// The opening of a self-contained report page: the shared stylesheet plus `extra_css`.
pub fn page_head(title: &str, extra_css: &str) -> String {
    format!(
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{}</title><style>{STYLE}{extra_css}</style></head><body>"#,
        escape(title)
    )
}
