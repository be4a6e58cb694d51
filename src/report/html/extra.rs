//! The server's side of an operation, and the generic rendering of the
//! record's parts that the page has no section of its own for.
//!
//! The generic part is what lets a figure added to the record later (SLO
//! verdicts, per-zone figures) show on the page before anyone writes a
//! section for it: the record is turned into JSON, the keys the page
//! already shows are set aside, and the rest is drawn as tables: an
//! object as key and value, a list of objects as a table with a column
//! per key.

use maud::{Markup, html};
use serde_json::Value;

use super::chart::{Chart, Line, MAX_POINTS, Thin, XAxis, thin};
use super::sections::{count, num_cell, table};
use plotters::style::RGBColor;

use crate::report::plot::axis::Kind;
use crate::report::plot::style;
use crate::stats::record::{OpRecord, RunRecord};
use crate::stats::server::ServerFigures;

/// The keys of a run that the page shows in its own sections.
const RUN_KEYS: &[&str] = &[
    "tool",
    "version",
    "started_at",
    "config",
    "server",
    "operations",
    "cluster",
    "per_statement",
];

/// The keys of an operation that the page shows in its own sections, or
/// leaves out on purpose (histograms, intervals: drawn, not listed).
const OP_KEYS: &[&str] = &[
    "operation",
    "table",
    "workload",
    "succeeded",
    "failure",
    "interrupted",
    "timed_out",
    "threads",
    "wallclock_s",
    "db_time_s",
    "warmup_s",
    "warmup_interrupted",
    "transactions",
    "unit",
    "unit_plural",
    "load",
    "measured",
    "batch",
    "missing_label",
    "histogram_of",
    "table_rows",
    "nontransactional",
    "latency_limit_ms",
    "units_per_s",
    "rows_per_s",
    "units",
    "rows",
    "missing_rows",
    "failed",
    "errors",
    "latency_ns",
    "service_ns",
    "attempt_ns",
    "row_latency_ns",
    "busy_ns",
    "lag_avg_ns",
    "lag_total_ns",
    "lag_max_ns",
    "late",
    "skipped",
    "retried",
    "retries",
    "reconnects",
    "failed_units",
    "schedule_wait_ns",
    "pause_wait_ns",
    "histograms",
    "rate_target",
    "pipeline",
    "driver",
    "thread_rows",
    "intervals",
    "types",
    "statements",
    "checks",
    "findings",
    "metrics",
    "metric_lines",
    "interval_metrics",
    "pauses",
    "hosts",
    "connect",
    "server",
    "start",
    "clients",
];

/// The run's parts without a section of their own.
pub fn of_run(r: &RunRecord) -> Markup {
    let v = serde_json::to_value(r).unwrap_or_default();
    rest(&v, RUN_KEYS, "More of the record")
}

/// The operation's parts without a section of their own.
pub fn of_operation(o: &OpRecord) -> Markup {
    let v = serde_json::to_value(o).unwrap_or_default();
    let mut m = rest(&v, OP_KEYS, "More of the record");
    if let Some(c) = &o.connect {
        let c = serde_json::to_value(c).unwrap_or_default();
        m = html! { (m) h3 { "Connect times (-C)" } (value_table(&c)) };
    }
    m
}

/// The keys of `v` not in `known`, each drawn as what it is.
fn rest(v: &Value, known: &[&str], title: &str) -> Markup {
    let Some(obj) = v.as_object() else {
        return html! {};
    };
    let more: Vec<(&String, &Value)> = obj
        .iter()
        .filter(|(k, v)| !known.contains(&k.as_str()) && !v.is_null())
        .collect();
    if more.is_empty() {
        return html! {};
    }
    html! {
        div.extra {
            h3 { (title) }
            @for (k, v) in more {
                div data-extra=(k) { h4 { (k) } (value(v)) }
            }
        }
    }
}

/// A JSON value as the page shows it.
fn value(v: &Value) -> Markup {
    match v {
        Value::Object(_) => value_table(v),
        Value::Array(a) if a.iter().all(Value::is_object) && !a.is_empty() => list_table(a),
        Value::Array(a) => html! { (a.iter().map(scalar).collect::<Vec<_>>().join(", ")) },
        other => html! { (scalar(other)) },
    }
}

/// A value in one cell: text as it is, the rest as JSON.
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "none".to_string(),
        other => other.to_string(),
    }
}

/// An object as a table of key and value.
pub fn value_table(v: &Value) -> Markup {
    let Some(obj) = v.as_object() else {
        return html! { p { (scalar(v)) } };
    };
    html! {
        table.kv {
            @for (k, x) in obj {
                tr data-key=(k) { th { (k) } td { @if x.is_object() || x.is_array() { (value(x)) } @else { (scalar(x)) } } }
            }
        }
    }
}

/// A list of objects as a table with a column per key.
fn list_table(a: &[Value]) -> Markup {
    let mut keys: Vec<&String> = Vec::new();
    for o in a.iter().filter_map(Value::as_object) {
        for k in o.keys() {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    let head: Vec<&str> = keys.iter().map(|k| k.as_str()).collect();
    let rows = html! {
        @for o in a {
            tr { @for k in &keys {
                @let x = o.get(k.as_str()).unwrap_or(&Value::Null);
                @if let Some(n) = x.as_f64() { (num_cell(n, scalar(x))) } @else { td { (scalar(x)) } }
            } }
        }
    };
    table("generic", &head, rows)
}

/// The server's side of an operation: what it counted against what the
/// tool counted, the tables, the top statements, the notes.
pub fn server(o: &OpRecord, s: &ServerFigures) -> Markup {
    let own = s.commits_without_own();
    html! {
        div.server {
            h3 { "The server's side" @if !s.nodes.is_empty() { " " span.sub { "(" (s.nodes.join(", ")) ")" } } }
            table.kv {
                tr data-figure="tool_units" { th { "units the tool counted" } td { (count(o.figures.ops)) " done, " (count(o.figures.failed())) " failed" } }
                @if let Some((c, r)) = own {
                    tr data-figure="server_commits" data-value=(c) { th { "server commits (without the tool's own)" } td { (count(c.max(0) as u64)) } }
                    tr { th { "server rollbacks" } td { (count(r.max(0) as u64)) } }
                }
                @if let Some(w) = &s.waits { tr { th { "backends per wait sample" } td { (format!("{:.2}", w.per_sample())) } } }
                @if s.left_open > 0 { tr { th { "backends left open" } td { (s.left_open) } } }
            }
            @if !s.tables.is_empty() {
                @let tables = serde_json::to_value(&s.tables).unwrap_or_default();
                (value(&tables))
            }
            (top_statements(s))
            @for n in &s.notes { p.note { (n) } }
        }
    }
}

/// pg_stat_statements' statements of the workload, most time first.
fn top_statements(s: &ServerFigures) -> Markup {
    let Some(list) = &s.statements else {
        return html! {};
    };
    let mut list: Vec<_> = list.iter().collect();
    list.sort_by(|a, b| b.total_exec_ms.total_cmp(&a.total_exec_ms));
    let total: f64 = list.iter().map(|s| s.total_exec_ms).sum::<f64>().max(1e-9);
    let rows = html! {
        @for st in list.iter().take(15) {
            tr {
                td.query { code { (st.query) } }
                (num_cell(st.calls as f64, count(st.calls.max(0) as u64)))
                (num_cell(st.rows as f64, count(st.rows.max(0) as u64)))
                (num_cell(st.total_exec_ms, format!("{:.1} ms", st.total_exec_ms)))
                (num_cell(st.total_exec_ms / total, format!("{:.1}%", st.total_exec_ms * 100.0 / total)))
                (num_cell(st.mean_exec_us(), format!("{:.1} us", st.mean_exec_us())))
            }
        }
    };
    html! {
        h4 { "Top statements (pg_stat_statements)" }
        (table("pgss", &["statement", "calls", "rows", "time", "share", "mean"], rows))
    }
}

/// What the run's backends were doing, interval by interval: the
/// average number of backends in each state per sample, stacked, the
/// largest six states apart and the rest as `other`.
pub fn wait_band(o: &OpRecord, s: &ServerFigures) -> Option<Chart> {
    let total = s.waits.as_ref()?;
    if s.intervals.iter().all(|i| i.waits.samples == 0) {
        return None;
    }
    let names: Vec<&str> = total.shares().into_iter().map(|(n, _)| n).take(6).collect();
    let mut c = Chart::new(
        "What the run's backends were doing (backends per sample)",
        XAxis::Seconds,
        Kind::Rate,
    );
    c.stacked = true;
    c.unit = Some("backends");
    let end_of = |i: u64| o.intervals.iter().find(|f| f.index == i).map(|f| f.end_s);
    let per = |si: &crate::stats::server::ServerInterval, name: Option<&str>| {
        let w = &si.waits;
        if w.samples == 0 {
            return 0.0;
        }
        let n: u64 = match name {
            Some(n) => w.events.get(n).copied().unwrap_or(0),
            None => w
                .events
                .iter()
                .filter(|(k, _)| !names.contains(&k.as_str()))
                .map(|(_, v)| *v)
                .sum(),
        };
        n as f64 / w.samples as f64
    };
    let mut add = |label: &str, name: Option<&str>| {
        let pts: Vec<(f64, f64)> = s
            .intervals
            .iter()
            .filter_map(|si| Some((end_of(si.index)?, per(si, name))))
            .collect();
        // `other` only when something is in it: an empty band is a
        // legend entry for nothing.
        if name.is_none() && pts.iter().all(|p| p.1 == 0.0) {
            return;
        }
        c.lines.push(Line::new(
            label,
            wait_color(label),
            thin(&pts, MAX_POINTS, Thin::Mean),
        ));
    };
    for n in &names {
        add(n, Some(n));
    }
    add("other", None);
    c.note = Some(
        "Sampled from pg_stat_activity: CPU is active with no wait event; Client:ClientRead is \
         waiting for the tool."
            .to_string(),
    );
    Some(c)
}

/// A state's colour: the pictures' own ([`style::wait_color`]), so that a
/// wait looks the same on the page and in the PNGs, and `other` (dark)
/// stands apart from Client:ClientRead (pale grey).
fn wait_color(name: &str) -> String {
    let RGBColor(r, g, b) = style::wait_color(name);
    format!("#{r:02x}{g:02x}{b:02x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_band_colours_are_the_pictures_and_other_stands_apart() {
        assert_eq!(wait_color("Client:ClientRead"), "#b9b9b9");
        assert_ne!(wait_color("other"), wait_color("Client:ClientRead"));
        assert_ne!(wait_color("other"), wait_color("idle"));
        // A wait the table does not name gets a fixed colour.
        assert_eq!(wait_color("Lock:advisory"), wait_color("Lock:advisory"));
    }
}
