//! The page of one run: its identity, then a section per operation with
//! its figures, charts and tables, and the server's side.

use maud::{Markup, html};

use super::chart::{Chart, Line, MAX_POINTS, PALETTE, Thin, XAxis, thin};
use super::sections::{self, count, ns, num_cell, rate, table};
use crate::report::plot::axis::Kind;
use crate::stats::Percentiles;
use crate::stats::record::{OpRecord, RunRecord};

/// The page's title: the operations and the server.
pub fn title(r: &RunRecord) -> String {
    let ops: Vec<&str> = r.operations.iter().map(|o| o.operation.as_str()).collect();
    format!(
        "ysql-bench: {} on {} {} ({})",
        ops.join(", "),
        r.server.flavor,
        r.server.version,
        r.started_at
    )
}

/// Everything under the page's head.
pub fn body(r: &RunRecord) -> Markup {
    html! {
        header {
            h1 { "ysql-bench " span.ops { (r.operations.iter().map(|o| o.operation.as_str()).collect::<Vec<_>>().join(", ")) } }
            p.sub { (r.server.flavor) " " (r.server.version) " · started " (r.started_at)
                @if let Some(c) = &r.cluster {
                    @if c.client_index.is_none() { " · merged from " (c.merged.len()) " of " (c.clients) " clients" }
                    @else if let Some(i) = c.client_index { " · client " (i) " of " (c.clients) }
                }
            }
            nav { @for (i, o) in r.operations.iter().enumerate() { a href=(format!("#op-{i}")) { (o.operation) } } a href="#identity" { "set-up" } }
        }
        @for (i, o) in r.operations.iter().enumerate() { (operation(i, o)) }
        (identity(r))
        (super::extra::of_run(r))
    }
}

/// What ran where and when, and the command that repeats it.
fn identity(r: &RunRecord) -> Markup {
    let config = serde_json::to_value(&r.config).unwrap_or_default();
    html! {
        section #identity {
            h2 { "Set-up" }
            div.cols {
                table.kv {
                    tr { th { "ysql-bench" } td { (r.version) } }
                    tr { th { "started" } td { (r.started_at) } }
                    tr { th { "server" } td { (r.server.flavor) " " (r.server.version) } }
                    tr { th { "encryption" } td { (r.server.encryption) } }
                    @for o in r.operations.iter().filter(|o| !o.driver.is_empty()) {
                        tr { th { (o.operation) " driver" } td { (o.driver) } }
                    }
                    @if let Some(c) = &r.cluster {
                        tr { th { "run id" } td { (c.run_id) } }
                        tr { th { "clients" } td { (c.clients) @if !c.merged.is_empty() { " (merged: " (c.merged.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")) ")" } } }
                        tr { th { "run seed" } td { (c.run_seed) } }
                    }
                }
                (super::extra::value_table(&config))
            }
            h3 { "The command that repeats it" }
            pre.cmd { (repeat_command(r)) }
            p.note { "Made from the configuration the report keeps; a workload's own flags are in its description above." }
        }
    }
}

/// A command line that runs the same set-up again: the one given (with
/// the seed used, when none was given), else one rebuilt from the record.
fn repeat_command(r: &RunRecord) -> String {
    let c = &r.config;
    if c.command_line.len() > 1 {
        let mut a: Vec<String> = vec!["ysql-bench".into()];
        a.extend(c.command_line[1..].iter().map(|v| shell_word(v)));
        let seeded = c
            .command_line
            .iter()
            .any(|v| v == "--seed" || v.starts_with("--seed="));
        if !seeded {
            let seed = r.cluster.as_ref().map_or(c.seed, |cl| cl.run_seed);
            a.push(format!("--seed {seed}"));
        }
        return a.join(" ");
    }
    let mut a: Vec<String> = vec!["ysql-bench".into()];
    let mut add = |flag: &str, v: String| {
        a.push(flag.to_string());
        if !v.is_empty() {
            a.push(if v.contains([' ', '\'', '"', ';']) {
                format!("'{}'", v.replace('\'', "'\\''"))
            } else {
                v
            });
        }
    };
    if !c.target.starts_with("sandbox") {
        add("-u", with_sslmode(&c.target, &c.sslmode));
    } else {
        add("--sandbox", String::new());
    }
    add("-o", c.operations.join(","));
    // A merged report's threads and rate are its clients' sums; each
    // client runs -t threads of its own and paces at its share of --rate
    // (or its --client-rate, which a client's own report keeps).
    let clients = r.cluster.as_ref().map_or(1, |cl| cl.clients.max(1));
    let merged = r
        .cluster
        .as_ref()
        .is_some_and(|cl| cl.client_index.is_none());
    let threads = if merged {
        c.threads.div_ceil(clients)
    } else {
        c.threads
    };
    add("-t", threads.to_string());
    add("-r", c.rows.to_string());
    if c.batch_size != 200 {
        add("-b", c.batch_size.to_string());
    }
    if c.fields_length != 24 {
        add("-f", c.fields_length.to_string());
    }
    if c.nontransactional {
        add("-n", String::new());
    }
    if let Some(t) = c.tablets {
        add("--tablets", t.to_string());
    }
    if !c.protocol.is_empty() {
        add("-M", c.protocol.clone());
    }
    add("--table-name", c.table.clone());
    match &r.cluster {
        Some(cl) => {
            add("--seed", cl.run_seed.to_string());
            add("--clients", cl.clients.to_string());
            add("--run-id", cl.run_id.clone());
            if let Some(i) = cl.client_index {
                add("--client-index", i.to_string());
            }
        }
        None => add("--seed", c.seed.to_string()),
    }
    match c.transactions {
        Some(n) => add("--transactions", n.to_string()),
        None => add("--time", format!("{}s", c.time_s)),
    }
    if let Some(w) = c.warmup_s {
        add("--warmup", format!("{w}s"));
    }
    if let Some(rt) = c.rate {
        let own = r.cluster.is_some() && !merged;
        add(if own { "--client-rate" } else { "--rate" }, plain(rt));
        add("--rate-distribution", c.rate_distribution.clone());
    }
    if let Some(l) = c.latency_limit_ms {
        add("--latency-limit", format!("{l}ms"));
    }
    if let Some(k) = &c.key_distribution {
        add("--key-distribution", k.clone());
    }
    if let Some(i) = &c.isolation {
        add("--isolation", i.clone());
    }
    if let Some(rs) = &c.retry_on {
        add("--retry-on", rs.join(","));
    }
    if let Some(m) = c.max_tries {
        add("--max-tries", m.to_string());
    }
    if c.reconnect {
        add("-C", String::new());
    }
    add("-P", format!("{}s", c.interval_s));
    a.join(" ")
}

/// The connection string with the run's sslmode in it when the run did
/// not use the default (prefer) and the string does not say it: there is
/// no --sslmode flag, the mode is part of the string as in libpq.
fn with_sslmode(target: &str, sslmode: &str) -> String {
    if sslmode.is_empty() || sslmode == "prefer" || target.contains("sslmode") {
        return target.to_string();
    }
    if target.starts_with("postgres://") || target.starts_with("postgresql://") {
        let sep = if target.contains('?') { '&' } else { '?' };
        format!("{target}{sep}sslmode={sslmode}")
    } else {
        format!("{target} sslmode={sslmode}")
    }
}

/// A flag's number without float noise: 300, 33.5 (a sum of the
/// clients' shares may come back as 299.99999999999994).
fn plain(v: f64) -> String {
    let s = format!("{v:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// One operation's section.
fn operation(i: usize, o: &OpRecord) -> Markup {
    let lat = Percentiles::of(&o.figures.latency);
    html! {
        section.op id=(format!("op-{i}")) data-operation=(o.operation) data-units=(o.figures.ops)
            data-rows=(o.figures.rows) data-units-per-s=(o.rates.units_per_s) data-p99-ns=(lat.p99) {
            h2 { (o.operation) @if !o.workload.is_empty() { " " span.workload { (o.workload) } } }
            @if let Some(f) = &o.failure { p.failure { "failed: " (f) } }
            @if o.interrupted { p.warn { "interrupted: the figures are of the time it ran" } }
            (headline(o, &lat))
            @if o.measured && o.figures.ops + o.figures.failed() > 0 {
                (types_table(o))
                (sections::charts(&op_charts(o)))
                (errors(o))
            }
            (sections_below(o))
            (super::extra::of_operation(o))
        }
    }
}

/// The tables under the charts: hosts, clients, checks, statements, server.
fn sections_below(o: &OpRecord) -> Markup {
    html! {
        (clients(o))
        (hosts(o))
        (checks(o))
        (statements(o))
        @if let Some(s) = &o.server { (super::extra::server(o, s)) }
    }
}

/// The charts of an operation.
fn op_charts(o: &OpRecord) -> Vec<Chart> {
    let mut out = vec![sections::throughput(o, "")];
    out.extend(sections::latency(o, ""));
    out.extend(sections::type_p99(o));
    out.extend(sections::spectrum(o));
    out.extend(sections::workload_figures(o));
    out.extend(sections::trouble(o));
    if let Some(s) = &o.server {
        out.extend(commits_chart(o, s));
        out.extend(super::extra::wait_band(o, s));
    }
    out
}

/// The server's commits per second beside the tool's units, per interval.
fn commits_chart(o: &OpRecord, s: &crate::stats::server::ServerFigures) -> Option<Chart> {
    if s.intervals.iter().all(|i| i.commits.is_none()) {
        return None;
    }
    let mut c = Chart::new(
        "Server commits and the tool's units (per second)",
        XAxis::Seconds,
        Kind::Rate,
    );
    let by_index = |i: u64| o.intervals.iter().find(|f| f.index == i);
    let pts: Vec<(f64, f64)> = s
        .intervals
        .iter()
        .filter_map(|si| {
            let f = by_index(si.index)?;
            let v = si.commits.map_or(f64::NAN, |n| {
                if f.seconds > 0.0 {
                    n as f64 / f.seconds
                } else {
                    f64::NAN
                }
            });
            Some((f.end_s, v))
        })
        .collect();
    let tool: Vec<(f64, f64)> = o.intervals.iter().map(|f| (f.end_s, f.ops_per_s)).collect();
    c.lines.push(Line::new(
        format!("{} (tool)", o.units()),
        PALETTE[0],
        thin(&tool, MAX_POINTS, Thin::Mean),
    ));
    c.lines.push(
        Line::new(
            "commits (server)",
            PALETTE[2],
            thin(&pts, MAX_POINTS, Thin::Mean),
        )
        .dashed(),
    );
    c.note = Some("A backend publishes its counts when idle and at most once a second, so the server's line is smeared by about a second; totals are in the server table.".to_string());
    Some(c)
}

/// The headline figures: throughput, percentiles, failures and the
/// workload's own figures.
fn headline(o: &OpRecord, lat: &Percentiles) -> Markup {
    let units = o.units();
    html! {
        div.cards {
            @if o.measured {
                div.card data-figure="units_per_s" data-value=(o.rates.units_per_s) { span.v { (rate(o.rates.units_per_s)) } span.l { (units) " per second" } }
                @if o.load { div.card data-figure="rows_per_s" data-value=(o.rates.rows_per_s) { span.v { (rate(o.rates.rows_per_s)) } span.l { "rows per second" } } }
                div.card data-figure="units" data-value=(o.figures.ops) { span.v { (count(o.figures.ops)) } span.l { (units) } }
                div.card data-figure="p50" data-value=(lat.p50) { span.v { (ns(lat.p50)) } span.l { "p50 latency" } }
                div.card data-figure="p99" data-value=(lat.p99) { span.v { (ns(lat.p99)) } span.l { "p99 latency" } }
                div.card data-figure="p999" data-value=(lat.p999) { span.v { (ns(lat.p999)) } span.l { "p99.9 latency" } }
                div.card.bad[o.figures.failed() > 0] data-figure="failed" data-value=(o.figures.failed()) { span.v { (count(o.figures.failed())) } span.l { "failed" } }
                @if o.figures.retries > 0 { div.card data-figure="retries" data-value=(o.figures.retries) { span.v { (count(o.figures.retries)) } span.l { "retries" } } }
                @if o.figures.reconnects > 0 { div.card data-figure="reconnects" data-value=(o.figures.reconnects) { span.v { (count(o.figures.reconnects)) } span.l { "reconnects" } } }
                @if let Some(t) = o.rate_target { div.card data-figure="rate_target" data-value=(t) { span.v { (rate(t)) } span.l { "target per second (--rate)" } } }
            }
            @for m in o.metric_lines() {
                div.card.metric data-metric=(m.key) data-value=(m.value) {
                    span.v { (metric_headline(&m.text, m.value)) } span.l { (m.label) }
                    @if !m.text.is_empty() && m.text != crate::stats::record::number(m.value) { span.t { (m.text) } }
                }
            }
        }
        p.facts {
            (o.threads) " threads · " (format!("{:.1}", o.wallclock_s)) " s measured"
            @if let Some(w) = o.warmup_s { " after " (w) " s of warmup" }
            @if !o.batch.is_empty() { " · " (o.batch) }
            @if o.pipeline > 1 { " · pipeline " (o.pipeline) }
            @if o.pipeline_sync > 1 { " in batches of " (o.pipeline_sync) " per Sync" }
            @if !o.table.is_empty() { " · table " (o.table) }
        }
    }
}

/// A workload figure's headline in its card: as the summary's text
/// begins when that is not a plain number ("39197.1%" for an efficiency
/// kept as a fraction, "met" for limits kept as 1), so that the card
/// reads as the summary does; else the value.
fn metric_headline(text: &str, value: f64) -> String {
    let first = text.split_whitespace().next().unwrap_or("");
    let worded = first.len() <= 16
        && first.parse::<f64>().is_err()
        && (first.starts_with(|c: char| c.is_ascii_digit())
            || (!first.is_empty() && first.chars().all(char::is_alphabetic)));
    if worded {
        first.to_string()
    } else {
        metric_value(value)
    }
}

/// A workload figure in a card: whole numbers grouped, others to one
/// decimal (or three significant digits when small).
fn metric_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        count(v.abs() as u64)
    } else if v.abs() >= 10.0 {
        rate(v)
    } else {
        format!("{v:.3}")
    }
}

/// The figures per transaction type and of all units, sortable.
fn types_table(o: &OpRecord) -> Markup {
    let served = o.figures.service != o.figures.latency;
    let mut head = vec![
        "type",
        "units",
        "share",
        "per second",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "max",
    ];
    if served {
        head.push("service p99");
    }
    head.extend(["failed", "retries"]);
    let mut rows: Vec<(&str, &crate::stats::Stats, f64)> = Vec::new();
    if o.is_mix() {
        rows.extend(
            o.types
                .iter()
                .map(|t| (t.name.as_str(), &t.figures, t.rates.units_per_s)),
        );
    }
    rows.push(("all", &o.figures, o.rates.units_per_s));
    let total = o.figures.ops.max(1) as f64;
    let body = html! {
        @for (name, f, per_s) in &rows {
            @let p = Percentiles::of(&f.latency);
            tr.all[*name == "all"] data-type=(name) data-units=(f.ops) data-p99-ns=(p.p99) data-units-per-s=(per_s) {
                td { (name) }
                (num_cell(f.ops as f64, count(f.ops)))
                (num_cell(f.ops as f64 / total, format!("{:.1}%", f.ops as f64 * 100.0 / total)))
                (num_cell(*per_s, rate(*per_s)))
                @for v in [p.p50, p.p90, p.p99, p.p999, p.max] { (num_cell(v as f64, ns(v))) }
                @if served { @let s = Percentiles::of(&f.service); (num_cell(s.p99 as f64, ns(s.p99))) }
                (num_cell(f.failed() as f64, count(f.failed())))
                (num_cell(f.retries as f64, count(f.retries)))
            }
        }
    };
    html! {
        h3 { "Per transaction type" }
        (table("types", &head, body))
        p.note { "Latency counts from when each unit was due (under --rate, its slot in the schedule), so a stalled server shows even while nothing was sent." }
    }
}

/// Failures by SQLSTATE or class, and the failed units named.
fn errors(o: &OpRecord) -> Markup {
    let f = &o.figures;
    if f.errors.is_empty() {
        return html! {};
    }
    let rows = html! {
        @for (class, n) in &f.errors {
            tr data-sqlstate=(class) data-count=(n) { td { code { (class) } } (num_cell(*n as f64, count(*n))) }
        }
    };
    html! {
        h3 { "Failed units by SQLSTATE" }
        (table("errors", &["SQLSTATE or class", "units"], rows))
        @if !f.failed_units.is_empty() { p.note { "For example: " (f.failed_units.join("; ")) } }
    }
}

/// A merged run: each client's start skew and share.
fn clients(o: &OpRecord) -> Markup {
    if o.clients.is_empty() {
        return html! {};
    }
    let total = o.clients.iter().map(|c| c.units).sum::<u64>().max(1) as f64;
    let rows = html! {
        @for c in &o.clients {
            tr data-client=(c.client) data-units=(c.units) {
                td { (c.client) }
                @let skew = c.skew_ms.unwrap_or(f64::NAN);
                (num_cell(skew, if skew.is_finite() { format!("{skew:+.2} ms") } else { "–".to_string() }))
                (num_cell(c.units as f64, count(c.units)))
                (num_cell(c.units as f64 / total, format!("{:.1}%", c.units as f64 * 100.0 / total)))
                (num_cell(c.units_per_s, rate(c.units_per_s)))
                (num_cell(c.wallclock_s, format!("{:.2} s", c.wallclock_s)))
            }
        }
    };
    html! {
        h3 { "Clients" }
        (table("clients", &["client", "start skew", "units", "share", "per second", "measured"], rows))
    }
}

/// Connections and units per host.
fn hosts(o: &OpRecord) -> Markup {
    if o.hosts.is_empty() {
        return html! {};
    }
    let rows = html! {
        @for h in &o.hosts {
            tr data-host=(h.host) { td { (h.host) } (num_cell(h.connections as f64, count(h.connections))) (num_cell(h.units as f64, count(h.units))) }
        }
    };
    html! { h3 { "Per host" } (table("hosts", &["host", "connections", "units"], rows)) }
}

/// The consistency checks and what an operation without units found.
fn checks(o: &OpRecord) -> Markup {
    html! {
        @if !o.checks.is_empty() {
            h3 { "Checks" }
            ul.checks { @for c in &o.checks { li.held[c.held].broken[!c.held] data-check=(c.name) data-held=(c.held) { (if c.held { "✔ " } else { "✘ " }) (c.name) @if !c.detail.is_empty() { ": " (c.detail) } } } }
        }
        @if !o.findings.is_empty() {
            table.kv { @for f in &o.findings { tr { th { (f.label) } td { (f.text) } } } }
        }
    }
}

/// The latency of each statement kind inside the units.
fn statements(o: &OpRecord) -> Markup {
    if o.statements.is_empty() {
        return html! {};
    }
    let rows = html! {
        @for s in &o.statements {
            @let p = Percentiles::of(&s.latency);
            tr data-statement=(s.name) {
                td { (s.name) } td { (s.class) }
                (num_cell(s.count as f64, count(s.count)))
                @for v in [p.p50, p.p99, p.max] { (num_cell(v as f64, ns(v))) }
            }
        }
    };
    html! { h3 { "Per statement" } (table("statements", &["statement", "class", "count", "p50", "p99", "max"], rows)) }
}

/// `v` as one word of a POSIX shell.
fn shell_word(v: &str) -> String {
    let plain = !v.is_empty()
        && v.chars()
            .all(|ch| ch.is_ascii_alphanumeric() || "-_=.,/:@%+".contains(ch));
    if plain {
        v.to_string()
    } else {
        format!("'{}'", v.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workload_figure_reads_in_its_card_as_in_the_summary() {
        // TPC-C keeps efficiency as a fraction and writes it in percent.
        let eff = "39197.1% of 12.86 tpmC × 1 warehouses (over 100% without keying)";
        assert_eq!(metric_headline(eff, 391.971), "39197.1%");
        assert_eq!(metric_headline("met (clause 5.2.5.3): ...", 1.0), "met");
        // A plain number is the value, grouped.
        assert_eq!(
            metric_headline("5040.8 (all 1683 New-Orders)", 5040.75),
            "5,040.8"
        );
        assert_eq!(metric_headline("391.9715", 391.9715), "392.0");
        assert_eq!(metric_headline("", 15.0), "15");
    }

    #[test]
    fn the_sslmode_goes_into_the_connection_string() {
        assert_eq!(with_sslmode("host=a", "prefer"), "host=a");
        assert_eq!(with_sslmode("host=a", "require"), "host=a sslmode=require");
        assert_eq!(
            with_sslmode("host=a sslmode=disable", "disable"),
            "host=a sslmode=disable"
        );
        assert_eq!(
            with_sslmode("postgres://u@h/db", "require"),
            "postgres://u@h/db?sslmode=require"
        );
        assert_eq!(
            with_sslmode("postgres://u@h/db?application_name=x", "verify-full"),
            "postgres://u@h/db?application_name=x&sslmode=verify-full"
        );
    }

    #[test]
    fn a_rate_is_written_without_float_noise() {
        assert_eq!(plain(100.0 / 3.0 * 3.0), "100");
        assert_eq!(plain(33.5), "33.5");
        assert_eq!(plain(300.0), "300");
    }
}
