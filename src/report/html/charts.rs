//! The report's charts as inline SVG, drawn here (no script, no library): score by tag,
//! latency distribution with p50/p95, cost per task and, with a baseline, the per-task
//! score change. Every label from the suite goes through `escape`.

use std::fmt::Write;

use serde::Serialize;

use super::escape;
use crate::results::{Results, percentile};

/// Bars drawn at most per chart; the rest are counted in the caption.
const MAX_BARS: usize = 25;
const WIDTH: f64 = 420.0;
const LABEL: f64 = 140.0;
const ROW: f64 = 18.0;

#[derive(Serialize)]
pub struct Chart {
    pub id: &'static str,
    pub title: &'static str,
    pub caption: String,
    /// Built here, every text in it escaped: the template inserts it as is.
    pub svg: String,
}

pub fn all(results: &Results) -> Vec<Chart> {
    [arms(results), score_by_tag(results), latency(results), cost(results), score_change(results)]
        .into_iter()
        .flatten()
        .collect()
}

fn score_by_tag(results: &Results) -> Option<Chart> {
    let tags = crate::results::by_tag(&results.tasks);
    if tags.is_empty() {
        return None;
    }
    let mut rows: Vec<(String, f64, String)> = tags
        .iter()
        .map(|t| (t.tag.to_owned(), t.score, format!("{:.2} · {}/{}", t.score, t.passed, t.tasks)))
        .collect();
    // The weakest tags first: that is where to look.
    rows.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    let caption = more("tags", rows.len());
    Some(Chart { id: "chart-tags", title: "Score by tag", caption, svg: bars(&rows, 1.0, "bar") })
}

fn latency(results: &Results) -> Option<Chart> {
    let mut ms: Vec<u64> = results.tasks.iter().filter_map(|t| t.latency_ms()).collect();
    if ms.is_empty() {
        return None;
    }
    ms.sort_unstable();
    let (p50, p95) = (percentile(&ms, 50).unwrap_or(0), percentile(&ms, 95).unwrap_or(0));
    let max = *ms.last().expect("not empty");
    let bins = 20usize;
    let width = (max / bins as u64 + 1).max(1);
    let mut counts = vec![0usize; bins];
    for m in &ms {
        counts[((m / width) as usize).min(bins - 1)] += 1;
    }
    let top = *counts.iter().max().expect("bins") as f64;
    let (h, plot) = (140.0, WIDTH - 40.0);
    let bar = plot / bins as f64;
    let x = |v: u64| 20.0 + (v as f64 / (width * bins as u64) as f64) * plot;
    let mut svg = svg_open(WIDTH, h + 48.0, "Latency distribution");
    for (i, c) in counts.iter().enumerate().filter(|(_, c)| **c > 0) {
        let bh = (*c as f64 / top) * h;
        let _ = write!(
            svg,
            r#"<rect class="bar" x="{:.1}" y="{:.1}" width="{:.1}" height="{bh:.1}"><title>{}–{} ms: {c} task(s)</title></rect>"#,
            20.0 + i as f64 * bar + 1.0,
            h - bh + 30.0,
            bar - 2.0,
            i as u64 * width,
            (i as u64 + 1) * width
        );
    }
    // Each mark is labelled on its own line above the bars: the two never overlap.
    for (label, v, class, y) in [("p50", p50, "mark", 11.0), ("p95", p95, "mark warn", 24.0)] {
        let _ = write!(
            svg,
            r#"<line class="{class}" x1="{0:.1}" x2="{0:.1}" y1="{2:.1}" y2="{1:.1}"/><text class="{class}" x="{3:.1}" y="{y:.1}">{label} {v} ms</text>"#,
            x(v),
            h + 30.0,
            y - 9.0,
            x(v) + 3.0,
        );
    }
    let _ = write!(svg, r#"<text x="20" y="{:.0}" class="axis">0</text>"#, h + 44.0);
    let _ = write!(
        svg,
        r#"<text x="{:.0}" y="{:.0}" class="axis" text-anchor="end">{} ms</text>"#,
        WIDTH - 20.0,
        h + 44.0,
        width * bins as u64
    );
    svg.push_str("</svg>");
    Some(Chart {
        id: "chart-latency",
        title: "Latency distribution",
        caption: format!("{} task(s) · p50 {p50} ms · p95 {p95} ms · max {max} ms", ms.len()),
        svg,
    })
}

fn cost(results: &Results) -> Option<Chart> {
    let mut rows: Vec<(String, f64, String)> =
        results.tasks.iter().filter_map(|t| t.cost_usd().map(|c| (t.id.clone(), c, format!("${c:.4}")))).collect();
    if rows.is_empty() {
        return None;
    }
    let total: f64 = rows.iter().map(|r| r.1).sum();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let top = rows[0].1.max(f64::MIN_POSITIVE);
    let caption = format!("${total:.4} over {} task(s), most expensive first{}", rows.len(), shown_note(rows.len()));
    Some(Chart { id: "chart-cost", title: "Cost per task", caption, svg: bars(&rows, top, "bar") })
}

fn score_change(results: &Results) -> Option<Chart> {
    let cmp = results.regression.as_ref()?.comparison.as_ref()?;
    let mut rows: Vec<(String, f64)> =
        cmp.score_drops.iter().chain(&cmp.score_gains).map(|(id, base, now)| (id.clone(), now - base)).collect();
    if rows.is_empty() {
        return Some(Chart {
            id: "chart-change",
            title: "Score change vs baseline",
            caption: "no task's score changed".into(),
            svg: String::new(),
        });
    }
    rows.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    let caption = format!(
        "{} lower, {} higher, the rest unchanged{}",
        cmp.score_drops.len(),
        cmp.score_gains.len(),
        shown_note(rows.len())
    );
    let rows: Vec<Diverging> = rows.into_iter().map(|(id, d)| (id, d, None)).collect();
    let svg = diverging(&rows, "Score change vs baseline");
    Some(Chart { id: "chart-change", title: "Score change vs baseline", caption, svg })
}

/// `variants`: each arm's difference in pass rate from the control, in points as the tables
/// give it, with its interval and, for a `not_worse_than` gate, its margin as a dashed line.
/// The axis spans what is drawn (the intervals and margins, rounded up to 5 points), not
/// −100..100, so a few points' difference is seen; the figure is written past the end of
/// the interval, never over it.
fn arms(results: &Results) -> Option<Chart> {
    let variants = results.variants.as_ref()?;
    let rows: Vec<(&str, &crate::results::arm_comparison::ArmComparison, Option<f64>)> = variants
        .arms
        .iter()
        .filter_map(|a| {
            let margin = a.gate.filter(|g| g.not_worse_than.is_some()).map(|g| g.margin());
            Some((a.name.as_str(), a.comparison.as_ref()?, margin))
        })
        .take(MAX_BARS)
        .collect();
    if rows.is_empty() {
        return None;
    }
    let reach = rows
        .iter()
        .flat_map(|(_, c, m)| [c.ci_low.abs(), c.ci_high.abs(), c.delta.abs(), m.unwrap_or(0.0)])
        .fold(0.0_f64, f64::max);
    let span = ((reach * 100.0 / 5.0).ceil().max(1.0) * 5.0).min(100.0) / 100.0;
    let (width, row) = (640.0, 30.0);
    let (left, right) = (LABEL, width - 70.0);
    let mid = (left + right) / 2.0;
    let x = |v: f64| mid + v.clamp(-span, span) / span * (right - left) / 2.0;
    let h = rows.len() as f64 * row + 28.0;
    let mut svg = svg_open(width, h, "Arms against the control");
    let _ = write!(svg, r#"<line class="axis-line" x1="{mid:.1}" x2="{mid:.1}" y1="0" y2="{:.1}"/>"#, h - 20.0);
    for (v, anchor) in [(-span, "start"), (0.0, "middle"), (span, "end")] {
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" class="axis" text-anchor="{anchor}">{} points</text>"#,
            x(v),
            h - 6.0,
            crate::results::paired_rates::points(v)
        );
    }
    for (i, (name, c, margin)) in rows.iter().enumerate() {
        let y = i as f64 * row + 6.0;
        let yc = y + row / 2.0 - 3.0;
        let (x0, x1) = (x(c.delta.min(0.0)), x(c.delta.max(0.0)));
        let class = if c.delta < 0.0 { "bar down" } else { "bar up" };
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" class="label" text-anchor="end">{}<title>{}</title></text><rect class="{class}" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}"/>"#,
            left - 6.0,
            yc + 4.0,
            escape(&short(name)),
            escape(name),
            yc - 6.0,
            x1 - x0,
            12.0,
        );
        let (lo, hi) = (x(c.ci_low), x(c.ci_high));
        let _ = write!(
            svg,
            r#"<line class="whisker" x1="{lo:.1}" x2="{hi:.1}" y1="{yc:.1}" y2="{yc:.1}"/><line class="whisker" x1="{lo:.1}" x2="{lo:.1}" y1="{:.1}" y2="{:.1}"/><line class="whisker" x1="{hi:.1}" x2="{hi:.1}" y1="{:.1}" y2="{:.1}"/>"#,
            yc - 5.0,
            yc + 5.0,
            yc - 5.0,
            yc + 5.0,
        );
        if let Some(m) = margin {
            let xm = x(-m);
            let _ = write!(
                svg,
                r#"<line class="mark margin" x1="{xm:.1}" x2="{xm:.1}" y1="{:.1}" y2="{:.1}"><title>margin −{:.1} points</title></line>"#,
                y,
                y + row - 4.0,
                m * 100.0
            );
        }
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" class="value">{}</text>"#,
            hi.max(x1) + 6.0,
            yc + 4.0,
            crate::results::paired_rates::points(c.delta)
        );
    }
    svg.push_str("</svg>");
    let caption = format!(
        "pass rate of each arm − the control {}'s, in points, with its {:.0}% interval{}",
        variants.control,
        (1.0 - variants.statistics.alpha()) * 100.0,
        if rows.iter().any(|r| r.2.is_some()) { "; dashed: a `not_worse_than` gate's margin" } else { "" }
    );
    Some(Chart { id: "chart-arms", title: "Arms against the control", caption, svg })
}

/// A bar of [`diverging`]: its label, value and interval.
type Diverging = (String, f64, Option<(f64, f64)>);

/// Bars from a middle axis: left for a negative value, right for a positive one (−1..1),
/// each with its interval as a whisker when it has one; the first `MAX_BARS` rows.
fn diverging(rows: &[Diverging], label: &str) -> String {
    let shown = &rows[..rows.len().min(MAX_BARS)];
    let h = shown.len() as f64 * ROW + 8.0;
    let mid = LABEL + (WIDTH - LABEL) / 2.0;
    let half = (WIDTH - LABEL) / 2.0 - 40.0;
    let mut svg = svg_open(WIDTH, h, label);
    let _ = write!(svg, r#"<line class="axis-line" x1="{mid:.1}" x2="{mid:.1}" y1="0" y2="{h:.1}"/>"#);
    for (i, (id, d, interval)) in shown.iter().enumerate() {
        let y = i as f64 * ROW + 4.0;
        let w = d.abs() * half;
        let (x, class, anchor, tx) = if *d < 0.0 {
            (mid - w, "bar down", "end", mid - w - 3.0)
        } else {
            (mid, "bar up", "start", mid + w + 3.0)
        };
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" class="label" text-anchor="end">{}</text><rect class="{class}" x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{:.1}"/><text x="{tx:.1}" y="{:.1}" text-anchor="{anchor}" class="value">{d:+.2}</text>"#,
            LABEL - 6.0,
            y + 12.0,
            escape(&short(id)),
            ROW - 5.0,
            y + 12.0,
        );
        if let Some((low, high)) = interval {
            let (x1, x2, yc) =
                (mid + low.clamp(-1.0, 1.0) * half, mid + high.clamp(-1.0, 1.0) * half, y + (ROW - 5.0) / 2.0);
            let _ = write!(svg, r#"<line class="whisker" x1="{x1:.1}" x2="{x2:.1}" y1="{yc:.1}" y2="{yc:.1}"/>"#);
        }
    }
    svg.push_str("</svg>");
    svg
}

/// Horizontal bars: label, bar (value / max), value text; the first `MAX_BARS` rows.
fn bars(rows: &[(String, f64, String)], max: f64, class: &str) -> String {
    let shown = &rows[..rows.len().min(MAX_BARS)];
    let h = shown.len() as f64 * ROW + 8.0;
    let span = WIDTH - LABEL - 90.0;
    let mut svg = svg_open(WIDTH, h, "");
    for (i, (label, value, text)) in shown.iter().enumerate() {
        let y = i as f64 * ROW + 4.0;
        let w = (value / max).clamp(0.0, 1.0) * span;
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" class="label" text-anchor="end">{}<title>{}</title></text><rect class="track" x="{LABEL:.1}" y="{y:.1}" width="{span:.1}" height="{:.1}"/><rect class="{class}" x="{LABEL:.1}" y="{y:.1}" width="{w:.1}" height="{:.1}"/><text x="{:.1}" y="{:.1}" class="value">{}</text>"#,
            LABEL - 6.0,
            y + 12.0,
            escape(&short(label)),
            escape(label),
            ROW - 5.0,
            ROW - 5.0,
            LABEL + span + 6.0,
            y + 12.0,
            escape(text),
        );
    }
    svg.push_str("</svg>");
    svg
}

fn svg_open(w: f64, h: f64, label: &str) -> String {
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w:.0} {h:.0}" width="{w:.0}" height="{h:.0}" role="img" aria-label="{}">"#,
        escape(label)
    )
}

/// A label cut to fit the label column.
fn short(label: &str) -> String {
    if label.chars().count() <= 22 {
        label.to_owned()
    } else {
        format!("{}…", label.chars().take(21).collect::<String>())
    }
}

fn more(what: &str, n: usize) -> String {
    if n > MAX_BARS { format!("weakest first; {MAX_BARS} of {n} {what} shown") } else { "weakest first".into() }
}

fn shown_note(n: usize) -> String {
    if n > MAX_BARS { format!("; {MAX_BARS} of {n} shown") } else { String::new() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Status, testing};

    #[test]
    fn labels_are_escaped_and_bars_are_capped() {
        let mut tasks: Vec<_> = (0..40).map(|i| testing::task(&format!("t{i}"), Status::Passed)).collect();
        tasks[0].tags = vec!["<script>".into()];
        let results = testing::results(tasks);
        let chart = score_by_tag(&results).unwrap();
        assert!(chart.svg.contains("&lt;script&gt;") && !chart.svg.contains("<script>"), "{}", chart.svg);
        let rows: Vec<(String, f64, String)> = (0..40).map(|i| (format!("r{i}"), 1.0, "x".into())).collect();
        assert_eq!(bars(&rows, 1.0, "bar").matches("class=\"bar\"").count(), MAX_BARS);
    }
}
