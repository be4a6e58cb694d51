//! The record of a live run ([`RunRecord`]), filled from the plan and
//! what ran: the report layer knows no plan, no server type and no
//! several-client gate, so this layer puts them into the record's plain
//! data.

use crate::config::RunPlan;
use crate::db::connect::ConnTarget;
use crate::report::text::TextOptions;
use crate::stats::record::{
    OpRecord, OpStart, RowSize, RunCluster, RunConfig, RunRecord, ServerRecord,
};

use super::RunReport;

/// What the text of the run holds, as the plan asks.
pub fn text_options(plan: &RunPlan) -> TextOptions {
    TextOptions {
        print_histogram: plan.output.print_histogram,
        per_statement: plan.output.per_statement,
        histogram_buckets: plan.output.histogram_buckets,
        histogram_scale: plan.output.histogram_scale,
    }
}

/// The record of a finished run: `operations` are the records of
/// `report`'s operations, in order, as their text was written.
pub fn run_record(
    plan: &RunPlan,
    target: &str,
    report: &RunReport,
    mut operations: Vec<OpRecord>,
    row_size: Option<RowSize>,
) -> RunRecord {
    // Starts are recorded in the order operations reached their first
    // unit; one that failed before has none.
    let mut starts = report
        .cluster
        .iter()
        .flat_map(|c| c.starts.iter())
        .peekable();
    for o in &mut operations {
        if let Some(st) = starts.next_if(|s| s.operation == o.operation) {
            o.start = Some(OpStart {
                at_s: st.at_s,
                skew_ms: st.skew_ms,
            });
        }
    }
    RunRecord {
        tool: "ysql-bench".to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        started_at: humantime::format_rfc3339_seconds(report.started_at).to_string(),
        config: run_config(plan, target, report),
        server: ServerRecord {
            flavor: format!("{:?}", report.server.flavor).to_lowercase(),
            version: report.server.version.clone(),
            encryption: report.server.encryption.clone(),
        },
        operations,
        cluster: report.cluster.as_ref().map(|c| RunCluster {
            run_id: c.plan.run_id.clone(),
            clients: c.plan.clients,
            client_index: Some(c.plan.index),
            run_seed: c.plan.run_seed,
            merged: Vec::new(),
        }),
        per_statement: plan.output.per_statement,
        row_size,
        slo: None,
        find_max: None,
    }
}

/// How the run was set up, as the record keeps it.
fn run_config(plan: &RunPlan, target: &str, report: &RunReport) -> RunConfig {
    let (w, r) = (&plan.workload, &plan.run);
    RunConfig {
        target: match &plan.target {
            ConnTarget::Sandbox => format!("sandbox ({target})"),
            ConnTarget::Server(_) => target.to_string(),
        },
        operations: plan.operations.iter().map(|o| o.name.to_string()).collect(),
        threads: w.threads,
        rows: w.rows,
        batch_size: w.batch_size,
        fields_length: w.field_len,
        nontransactional: r.nontransactional,
        tablets: w.tablets,
        prepared: w.prepared,
        protocol: w.protocol.name().to_string(),
        table: report
            .operations
            .first()
            .map(|o| o.table.clone())
            .unwrap_or_default(),
        seed: w.seed,
        key_distribution: w.keys.map(|k| k.name().to_string()),
        isolation: r.isolation.map(|i| i.sql().to_string()),
        retry_on: r.retry_on.clone(),
        max_tries: r.max_tries,
        time_s: r.run_time.as_secs_f64(),
        transactions: r.transactions,
        warmup_s: r.warmup.map(|d| d.as_secs_f64()),
        rate: r.rate,
        rate_distribution: format!("{:?}", r.rate_distribution).to_lowercase(),
        latency_limit_ms: r.latency_limit.map(|d| d.as_secs_f64() * 1e3),
        interval_s: r.interval().as_secs_f64(),
        load_balance: plan.balance.name().to_string(),
        topology: plan.topology.as_ref().map(|t| t.describe()),
        reconnect: r.reconnect,
        sslmode: plan.tls.mode.name().to_string(),
        command_line: plan.command_line.clone(),
    }
}
