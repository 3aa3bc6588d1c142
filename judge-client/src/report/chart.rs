//! The reports' charts, drawn as inline SVG (no script, nothing fetched): [`BarChart`],
//! horizontal bars, one row per item (a test type, a scenario, a load level, a category) and one
//! bar per series in each row, fractions on a 0-100 % axis and other values on a linear axis up
//! to the largest; and [`fraction_line`], a line of fractions over labelled points.

use std::fmt::Write;

use super::escape::escape;

/// The chart colours the reports use.
pub mod colour {
    pub const BLUE: &str = "#3b82f6";
    pub const GREEN: &str = "#16a34a";
    pub const GREY: &str = "#9ca3af";
    pub const PASSED: &str = "#17803d";
    pub const FAILED: &str = "#b42318";
}

/// How values map to bar lengths.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    /// 0 to 1, with grid lines and percentage labels at these ticks.
    Fraction(&'static [f64]),
    /// 0 to the largest value of the chart.
    Linear,
}

/// One bar: its value (`None`: drawn as `missing`'s text), the text beside it, and optionally
/// its own colour and an interval drawn across it.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub value: Option<f64>,
    pub text: String,
    pub colour: Option<&'static str>,
    pub interval: Option<(f64, f64)>,
}

impl Bar {
    pub fn new(value: Option<f64>, text: impl Into<String>) -> Self {
        Self {
            value,
            text: text.into(),
            colour: None,
            interval: None,
        }
    }

    pub fn colour(mut self, colour: &'static str) -> Self {
        self.colour = Some(colour);
        self
    }

    pub fn interval(mut self, interval: Option<(f64, f64)>) -> Self {
        self.interval = interval;
        self
    }
}

/// A row: its label and one bar per series.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub label: String,
    pub bars: Vec<Bar>,
}

/// A series: its name (in the legend, when there are several) and its bars' colour.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Series {
    pub name: &'static str,
    pub colour: &'static str,
}

/// A horizontal bar chart.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    /// What the chart shows (its accessible name, and its heading when `heading` is set).
    pub title: String,
    pub heading: bool,
    pub scale: Scale,
    pub series: Vec<Series>,
    pub rows: Vec<Row>,
    /// Width of the row labels' column, in pixels.
    pub label_width: f64,
    /// Length of a full bar, in pixels.
    pub width: f64,
    /// Height of one bar, in pixels.
    pub bar_height: f64,
    /// Text for a bar without a value.
    pub missing: &'static str,
}

impl BarChart {
    /// A chart of one series.
    pub fn new(title: impl Into<String>, scale: Scale, colour: &'static str) -> Self {
        Self {
            title: title.into(),
            heading: false,
            scale,
            series: vec![Series { name: "", colour }],
            rows: Vec::new(),
            label_width: 190.0,
            width: 480.0,
            bar_height: 18.0,
            missing: "n/a",
        }
    }

    /// Adds a row of one bar per series.
    pub fn row(&mut self, label: impl Into<String>, bars: Vec<Bar>) -> &mut Self {
        self.rows.push(Row {
            label: label.into(),
            bars,
        });
        self
    }

    fn max(&self) -> f64 {
        match self.scale {
            Scale::Fraction(_) => 1.0,
            Scale::Linear => self
                .rows
                .iter()
                .flat_map(|r| r.bars.iter().filter_map(|b| b.value))
                .fold(0.0f64, f64::max)
                .max(0.001),
        }
    }

    /// The chart as inline SVG (after an `<h3>` of its title when `heading` is set); empty when
    /// it has no row.
    pub fn render(&self) -> String {
        if self.rows.is_empty() {
            return String::new();
        }
        let (left, width, bar) = (self.label_width, self.width, self.bar_height);
        let per_row = self.series.len().max(1) as f64;
        let row_height = bar * per_row + if per_row > 1.0 { 10.0 } else { 8.0 };
        let axis = match self.scale {
            Scale::Fraction(ticks) if !ticks.is_empty() => 24.0,
            _ => 0.0,
        };
        let legend = if self.series.len() > 1 { 20.0 } else { 0.0 };
        let height = row_height * self.rows.len() as f64 + axis + legend + 6.0;
        let max = self.max();
        let x_of = |v: f64| left + (v / max).clamp(0.0, 1.0) * width;
        let mut svg = String::new();
        if self.heading {
            let _ = write!(svg, "<h3>{}</h3>", escape(&self.title));
        }
        let _ = write!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{height}" role="img" aria-label="{}">"#,
            left + width + 130.0,
            escape(&self.title)
        );
        if let Scale::Fraction(ticks) = self.scale {
            let bottom = height - legend - axis + 4.0;
            for tick in ticks {
                let x = x_of(*tick);
                let _ = write!(
                    svg,
                    r##"<line x1="{x:.1}" y1="0" x2="{x:.1}" y2="{bottom:.1}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" font-size="11" text-anchor="middle">{:.0}%</text>"##,
                    bottom + 14.0,
                    tick * 100.0
                );
            }
        }
        let font = if per_row > 1.0 { 9.0 } else { 11.0 };
        for (i, row) in self.rows.iter().enumerate() {
            let y0 = i as f64 * row_height + 4.0;
            let _ = write!(
                svg,
                r#"<text x="{}" y="{:.1}" font-size="12" text-anchor="end">{}</text>"#,
                left - 8.0,
                y0 + bar * per_row / 2.0 + 4.0,
                escape(&row.label)
            );
            for (j, b) in row.bars.iter().enumerate() {
                let y = y0 + j as f64 * bar;
                let text_y = y + bar * 0.75;
                let Some(value) = b.value else {
                    let _ = write!(
                        svg,
                        r##"<text x="{}" y="{text_y:.1}" font-size="{font}" fill="#777">{}</text>"##,
                        left + 4.0,
                        escape(self.missing)
                    );
                    continue;
                };
                let colour = b
                    .colour
                    .or(self.series.get(j).map(|s| s.colour))
                    .unwrap_or(colour::BLUE);
                let end = x_of(value);
                let _ = write!(
                    svg,
                    r#"<rect x="{left}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{colour}"/><text x="{:.1}" y="{text_y:.1}" font-size="{font}">{}</text>"#,
                    (end - left).max(1.0),
                    bar - 1.0,
                    end + 4.0,
                    escape(&b.text)
                );
                if let Some((lo, hi)) = b.interval {
                    let _ = write!(
                        svg,
                        r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#111" stroke-width="1.5"/>"##,
                        x_of(lo),
                        y + bar / 2.0,
                        x_of(hi),
                        y + bar / 2.0
                    );
                }
            }
        }
        if self.series.len() > 1 {
            let legend_y = height - 6.0;
            for (j, s) in self.series.iter().enumerate() {
                let x = left + j as f64 * 150.0;
                let _ = write!(
                    svg,
                    r#"<rect x="{x}" y="{}" width="10" height="10" fill="{}"/><text x="{}" y="{legend_y}" font-size="11">{}</text>"#,
                    legend_y - 9.0,
                    s.colour,
                    x + 14.0,
                    escape(s.name)
                );
            }
        }
        svg.push_str("</svg>");
        svg
    }
}

/// A line of fractions (0 to 1) over labelled points, such as a retention curve; `None` without
/// points.
pub fn fraction_line(title: &str, points: &[(String, f64)]) -> Option<String> {
    if points.is_empty() {
        return None;
    }
    let (left, width, top, height) = (50.0, 420.0, 10.0, 160.0);
    let step = width / (points.len().max(2) - 1) as f64;
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" role="img" aria-label="{}">"#,
        left + width + 40.0,
        top + height + 40.0,
        escape(title)
    );
    for tick in [0.0, 0.5, 1.0] {
        let y = top + (1.0 - tick) * height;
        let _ = write!(
            svg,
            r##"<line x1="{left}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" font-size="11" text-anchor="end">{:.0}%</text>"##,
            left + width,
            left - 6.0,
            y + 4.0,
            tick * 100.0
        );
    }
    let coords: Vec<(f64, f64)> = points
        .iter()
        .enumerate()
        .map(|(i, (_, v))| (left + i as f64 * step, top + (1.0 - v) * height))
        .collect();
    let path: Vec<String> = coords
        .iter()
        .map(|(x, y)| format!("{x:.1},{y:.1}"))
        .collect();
    let _ = write!(
        svg,
        r##"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"/>"##,
        path.join(" "),
        colour::BLUE
    );
    for ((x, y), (label, _)) in coords.iter().zip(points) {
        let _ = write!(
            svg,
            r##"<circle cx="{x:.1}" cy="{y:.1}" r="4" fill="{}"/><text x="{x:.1}" y="{}" font-size="11" text-anchor="middle">{}</text>"##,
            colour::BLUE,
            top + height + 18.0,
            escape(label)
        );
    }
    svg.push_str("</svg>");
    Some(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rects(svg: &str) -> Vec<f64> {
        svg.split("<rect ")
            .skip(1)
            .filter_map(|r| {
                let w = r.split("width=\"").nth(1)?.split('"').next()?;
                w.parse().ok()
            })
            .collect()
    }

    #[test]
    fn fractions_fill_their_share_of_the_axis_and_missing_values_say_so() {
        let mut chart = BarChart::new("Score per type", Scale::Fraction(&[0.0, 1.0]), "#000");
        chart.width = 400.0;
        chart
            .row(
                "a <b>",
                vec![Bar::new(Some(0.5), "50%").interval(Some((0.25, 0.75)))],
            )
            .row("c", vec![Bar::new(None, "")]);
        let svg = chart.render();
        assert_eq!(rects(&svg), [200.0]);
        assert!(svg.contains("a &lt;b&gt;") && svg.contains(">n/a<"));
        assert!(svg.contains(r#"aria-label="Score per type""#));
        assert!(
            svg.contains("stroke-width=\"1.5\""),
            "the interval is drawn"
        );
        assert!(svg.contains(">100%<"), "the axis is labelled");
    }

    #[test]
    fn linear_bars_scale_to_the_largest_and_series_get_a_legend() {
        let mut chart = BarChart::new("Latency", Scale::Linear, "#000");
        chart.width = 100.0;
        chart.heading = true;
        chart.series = vec![
            Series {
                name: "p50",
                colour: "#111",
            },
            Series {
                name: "p99",
                colour: "#222",
            },
        ];
        chart.row(
            "c=1",
            vec![Bar::new(Some(2.0), "2"), Bar::new(Some(4.0), "4")],
        );
        let svg = chart.render();
        assert!(svg.starts_with("<h3>Latency</h3><svg"));
        // Two bars, then the two legend swatches.
        assert_eq!(rects(&svg), [50.0, 100.0, 10.0, 10.0]);
        assert!(svg.contains(">p99<"));
        assert!(
            BarChart::new("empty", Scale::Linear, "#000")
                .render()
                .is_empty()
        );
    }
}
