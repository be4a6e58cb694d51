//! select and update against a loaded table on a real server.

mod common;
use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn select_and_update_find_every_row_and_count_their_queries() {
    let sb = sandbox();
    let c = client(&sb).await;
    let (load, _) = run_args(&sb, &["-o", "copy-mem", "-r", "2000", "-t", "2"]).await;
    assert!(load.succeeded());
    let (report, summary) = run_args(
        &sb,
        &[
            "-o",
            "select,update",
            "-r",
            "2000",
            "-t",
            "3",
            "--time",
            "1s",
            "-f",
            "10",
        ],
    )
    .await;
    assert!(report.succeeded(), "{summary}");
    for op in &report.operations {
        assert!(
            op.total.ops > 100,
            "{:?} ran only {} queries",
            op.spec,
            op.total.ops
        );
        assert_eq!(op.total.missing, 0);
        assert_eq!(op.total.ops, op.total.latency.len());
        let secs = op.wallclock.as_secs_f64();
        assert!((0.95..3.0).contains(&secs), "{:?} ran {secs} s", op.spec);
    }
    let selects = report.operations[0].total.ops;
    assert!(
        summary.contains(&format!("nr queries            : {selects}\n")),
        "{summary}"
    );
    assert!(summary.contains("missing rows          : 0"));
    // The update wrote fields of the new length into the rows it touched.
    let updated: i64 = c
        .query_one("select count(*) from test_table where length(f1) = 10", &[])
        .await
        .unwrap()
        .get(0);
    assert!(updated > 0);
    let untouched_or_updated: i64 = c
        .query_one(
            "select count(*) from test_table where length(f1) in (10, 24) and length(f1) = length(f4)",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(untouched_or_updated, 2000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_rows_are_counted_not_fatal() {
    let sb = sandbox();
    let (load, _) = run_args(&sb, &["-o", "insert", "-r", "100"]).await;
    assert!(load.succeeded());
    // Ask for ids 0..1000 of a table holding 0..100: about 90% are missing.
    for extra in [&[][..], &["--no-prepared"][..]] {
        let mut args = vec![
            "-o",
            "select,update",
            "-r",
            "1000",
            "--time",
            "500ms",
            "-t",
            "2",
        ];
        args.extend_from_slice(extra);
        let (report, summary) = run_args(&sb, &args).await;
        assert!(report.succeeded(), "{summary}");
        for op in &report.operations {
            let share = op.total.missing as f64 / op.total.ops as f64;
            assert!((0.8..0.97).contains(&share), "{:?}: {share}", op.spec);
        }
    }
}
