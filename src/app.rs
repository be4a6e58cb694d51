//! One whole run: connect, check the server and the table, run the
//! operations in order, and write their summaries.
//!
//! This is the library's entry point; `main` only parses flags, builds the
//! runtime and maps the result to an exit code. Tests call [`run`] in
//! process against their own sandbox servers.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::config::RunPlan;
use crate::db::connect::{self, ConnTarget};
use crate::db::dialect::Flavor;
use crate::db::sandbox::{Sandbox, SandboxOptions};
use crate::db::schema::{self, ServerInfo};
use crate::error::{Error, Result};
use crate::report::summary::write_summary;
use crate::runner::{self, RunCtx};
use crate::stats::OpResult;

/// How many rows `--show-rowsize` samples.
pub const ROWSIZE_SAMPLE: i64 = 10_000;

/// What a run did.
#[derive(Debug)]
pub struct RunReport {
    pub server: ServerInfo,
    pub operations: Vec<OpResult>,
}

impl RunReport {
    /// Whether every operation ran to its end without a failed unit.
    pub fn succeeded(&self) -> bool {
        self.operations.iter().all(|o| o.succeeded())
    }
}

/// Runs the plan, writing each operation's summary to `out` as soon as it
/// ends. Errors before the first operation are returned as errors; an
/// operation that fails ends the run, and is in the report.
pub async fn run(plan: RunPlan, out: &mut dyn Write) -> Result<RunReport> {
    // Kept alive for the whole run; dropped (server stopped, directory
    // removed) when the run ends or its future is dropped on Ctrl-C.
    let mut _sandbox = None;
    let config = match &plan.target {
        ConnTarget::Server(c) => (**c).clone(),
        ConnTarget::Sandbox => {
            eprintln!(">> start sandbox server");
            let sb = Sandbox::start(SandboxOptions::default())?;
            let c = sb.config();
            _sandbox = Some(sb);
            c
        }
    };
    eprintln!(">> connect {}", connect::describe(&config));
    let pool = connect::pool(&config, plan.threads)?;
    let client = connect::get(&pool, &config).await?;
    let server = schema::detect(&client).await?;
    eprintln!(">> server: {}", server.version);
    if server.flavor == Flavor::Postgres {
        if plan.nontransactional {
            return Err(Error::usage(
                "--nontransactional sets yb_disable_transactional_writes, which only YugabyteDB has: leave it out on PostgreSQL",
            ));
        }
        if plan.tablets.is_some() {
            eprintln!("warning: --tablets applies to YugabyteDB only; ignored on PostgreSQL");
        }
    }
    let writes = plan.operations.iter().any(|o| o.writes());
    schema::prepare_table(&client, &plan, server.flavor, writes).await?;
    drop(client);

    let ctx = RunCtx {
        plan: Arc::new(plan),
        pool,
        config: Arc::new(config),
        stop: Arc::new(AtomicBool::new(false)),
    };
    let mut report = RunReport {
        server,
        operations: Vec::new(),
    };
    for &kind in &ctx.plan.operations {
        eprintln!(">> {kind}");
        let result = runner::run_operation(&ctx, kind).await;
        write_summary(out, &result).map_err(|e| Error::io("cannot write the summary", e))?;
        let ok = result.succeeded();
        report.operations.push(result);
        if !ok && kind.is_load() {
            break;
        }
    }
    if ctx.plan.show_rowsize {
        let client = connect::get(&ctx.pool, &ctx.config).await?;
        let line = match schema::average_row_size(&client, &ctx.plan.table, ROWSIZE_SAMPLE).await? {
            Some((avg, n)) => format!("{avg:.1} bytes (average over {n} rows)"),
            None => "empty table".to_string(),
        };
        writeln!(out, "{:<22}: {line}", "row size").map_err(|e| Error::io("cannot write", e))?;
    }
    Ok(report)
}
