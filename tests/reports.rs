//! Reports against a real server: PNGs, JSON, CSV and the latency log
//! agree with the run and with each other.

mod common;
use common::*;
use ysql_bench::stats::record::RunRecord as JsonReport;
use ysql_bench::stats::saved::decode_histogram;

fn decode_png(path: &std::path::Path) -> (u32, u32, Vec<u8>, png::ColorType) {
    let decoder = png::Decoder::new(std::fs::File::open(path).expect("png opens"));
    let mut reader = decoder.read_info().expect("png header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("png frame");
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf, info.color_type)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graphs_json_csv_and_log_describe_the_same_run() {
    let sb = sandbox();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (json, csv, log) = (d.join("run.json"), d.join("run.csv"), d.join("lat.csv"));
    let args = [
        "-o",
        "copy-mem,select",
        "-r",
        "3000",
        "-t",
        "2",
        "-b",
        "100",
        "--time",
        "1500ms",
        "--graph",
        "--graph-size",
        "640x480",
        "--graph-dir",
        d.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "--latency-log",
        log.to_str().unwrap(),
        "-P",
        "0.5",
    ];
    let (report, summary) = run_args(&sb, &args).await;
    assert!(report.succeeded(), "{summary}");

    // Two pictures per operation, of the asked size, not blank.
    let pngs: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "png"))
        .collect();
    assert_eq!(pngs.len(), 4, "{pngs:?}");
    for p in &pngs {
        let (w, h, pixels, color) = decode_png(p);
        assert_eq!((w, h), (640, 480), "{}", p.display());
        assert_eq!(color, png::ColorType::Rgb);
        let distinct: std::collections::HashSet<&[u8]> = pixels.chunks(3).collect();
        assert!(
            distinct.len() > 20,
            "{} has {} colours",
            p.display(),
            distinct.len()
        );
        let white = pixels.chunks(3).filter(|c| c == &[255, 255, 255]).count();
        assert!(
            white < (w * h) as usize * 98 / 100,
            "{} is almost blank",
            p.display()
        );
    }
    assert!(
        pngs.iter()
            .any(|p| p.to_str().unwrap().contains("select-latency"))
    );
    assert!(
        pngs.iter()
            .any(|p| p.to_str().unwrap().contains("copy-mem-throughput"))
    );

    // JSON: what the docs say, and histograms that decode to the counts.
    let doc: JsonReport = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let raw: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc.tool, "ysql-bench");
    assert_eq!(doc.server.flavor, "postgres");
    // The test harness connects without TLS (sslmode=prefer on a server
    // without ssl): the report says so.
    assert_eq!(doc.server.encryption, "none");
    assert_eq!(doc.config.threads, 2);
    assert!(!doc.config.target.contains("password"));
    assert_eq!(doc.operations.len(), 2);
    for (i, (j, op)) in doc.operations.iter().zip(&report.operations).enumerate() {
        assert_eq!(j.operation, op.spec.name);
        // Read back, the statistics are the run's own.
        assert_eq!(j.figures.ops, op.total.ops);
        assert_eq!(j.figures.rows, op.total.rows);
        assert_eq!(j.figures.busy, op.total.busy);
        assert_eq!(j.figures.lag_total, op.total.lag_total);
        assert_eq!(j.figures.latency, op.total.latency);
        assert_eq!(j.figures.service, op.total.service);
        // As written: the README's fields, the histogram decodable alone.
        let w = &raw["operations"][i];
        assert_eq!(w["units"].as_u64(), Some(op.total.ops));
        let h = decode_histogram(w["histograms"]["latency"].as_str().unwrap()).unwrap();
        assert_eq!(h.len(), op.total.ops);
        assert_eq!(h.max(), op.total.latency.max());
        let p = &w["latency_ns"];
        assert!(p["p50"].as_u64() <= p["p99"].as_u64() && p["p99"].as_u64() <= p["max"].as_u64());
        assert_eq!(
            j.intervals.iter().map(|i| i.ops).sum::<u64>(),
            j.figures.ops
        );
    }
    assert_eq!(doc.operations[0].figures.rows, 3000);
    assert!(raw["operations"][0]["row_latency_ns"].is_object());

    // CSV: counts per interval add up to the summary's.
    let mut rd = csv::Reader::from_path(&csv).unwrap();
    let mut counts = std::collections::HashMap::<String, u64>::new();
    for rec in rd.records() {
        let rec = rec.unwrap();
        *counts.entry(rec[0].to_string()).or_default() += rec[3].parse::<u64>().unwrap();
    }
    assert_eq!(counts["copy-mem"], report.operations[0].total.ops);
    assert_eq!(counts["select"], report.operations[1].total.ops);
    assert!(summary.contains(&format!("nr queries            : {}\n", counts["select"])));

    // The latency log holds every unit.
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "operation,thread,start_us,latency_us,service_us,rows,ok,type"
    );
    // Each line ends with the unit's transaction type.
    assert!(
        lines[1..]
            .iter()
            .all(|l| l.ends_with(",batch") || l.ends_with(",query"))
    );
    let selects = lines.iter().filter(|l| l.starts_with("select,")).count() as u64;
    assert_eq!(selects, report.operations[1].total.ops);
    let copied: u64 = lines
        .iter()
        .filter(|l| l.starts_with("copy-mem,"))
        .map(|l| l.split(',').nth(5).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(copied, 3000);
}

/// Issue 22: a load shorter than the 1 s interval drew its throughput as
/// one dot. Its picture is a line across the run: `all`'s colour in most
/// columns of the rate panel (the top half).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_second_load_draws_its_throughput_as_a_line() {
    let sb = sandbox();
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "-o",
        "copy-mem",
        "-r",
        "20000",
        "-t",
        "2",
        "-b",
        "100",
        "--graph",
        "--graph-size",
        "640x480",
        "--graph-dir",
        dir.path().to_str().unwrap(),
    ];
    let (report, summary) = run_args(&sb, &args).await;
    assert!(report.succeeded(), "{summary}");
    let op = &report.operations[0];
    assert_eq!(op.intervals.len(), 1, "a sub-second load: {summary}");
    let png = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("throughput.png"))
        .expect("a throughput picture");
    let (w, h, pixels, _) = decode_png(&png);
    let c = ysql_bench::report::plot::ALL_COLOR;
    let columns = (0..w as usize)
        .filter(|x| {
            (0..h as usize / 2).any(|y| {
                let i = (y * w as usize + x) * 3;
                pixels[i..i + 3] == [c.0, c.1, c.2]
            })
        })
        .count();
    assert!(
        columns > w as usize / 2,
        "{}: all's colour in {columns} of {w} columns",
        png.display()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_histogram_and_row_size_are_printed_as_asked() {
    let sb = sandbox();
    let (report, text) = run_args(
        &sb,
        &[
            "-o",
            "insert",
            "-r",
            "2000",
            "-b",
            "100",
            "-p",
            "--histogram-buckets",
            "4",
            "--show-rowsize",
        ],
    )
    .await;
    assert!(report.succeeded());
    assert!(text.contains("histogram is per batch (100 rows)"), "{text}");
    assert!(text.contains("# Number of samples = 20"), "{text}");
    assert_eq!(
        text.lines()
            .filter(|l| l.contains(" .. ") && l.contains("]:"))
            .count(),
        4
    );
    let size_line = text.lines().find(|l| l.starts_with("row size")).unwrap();
    assert!(
        size_line.contains("bytes (average over 2000 rows)"),
        "{size_line}"
    );
    // An empty table says so instead of failing (a run can no longer
    // load 0 rows, so the table is emptied by hand).
    let c = client(&sb).await;
    c.batch_execute("truncate test_table").await.unwrap();
    let table = ysql_bench::db::sql::TableName::new("test_table").unwrap();
    let size = ysql_bench::db::schema::average_row_size(&c, &table, 100)
        .await
        .unwrap();
    assert_eq!(size, None);
}

/// Issue 22: the default `-p` histogram (linear, 10 rows) put 99.9% of a
/// run's units in its first row when a few were much slower. The default
/// now spreads the bulk over several rows and keeps the tail in view; the
/// original tool's linear rows stay one flag away. The latencies are a
/// select's on a local server: most between 30 and 100 us, a tail to
/// 400 us, ten stalls of 5 to 50 ms.
#[test]
fn the_default_histogram_spreads_the_bulk_over_its_rows() {
    use ysql_bench::report::histogram::write_histogram;
    let mut h = ysql_bench::stats::new_histogram();
    for (us, n) in [
        (30, 2000),
        (40, 3000),
        (50, 2000),
        (60, 1200),
        (80, 800),
        (100, 400),
        (150, 200),
        (200, 100),
        (300, 50),
        (400, 20),
        (5_000, 9),
        (50_000, 1),
    ] {
        for _ in 0..n {
            ysql_bench::stats::record_ns(&mut h, us * 1000);
        }
    }
    let rows = |args: &[&str]| -> Vec<u64> {
        let plan = plan_of(args);
        let mut out = Vec::new();
        write_histogram(
            &mut out,
            &h,
            plan.output.histogram_buckets,
            plan.output.histogram_scale,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        // The original tool's header, then `start .. end [ count ]: bar`.
        for head in [
            "# Number of samples = 9780",
            "# Min = ",
            "# Each ∎ is a count of",
        ] {
            assert!(text.contains(head), "{head}\n{text}");
        }
        text.lines()
            .filter_map(|l| l.split('[').nth(1)?.split(']').next()?.trim().parse().ok())
            .collect()
    };
    let default = rows(&["-o", "select", "-p"]);
    let total: u64 = default.iter().sum();
    assert_eq!(total, 9780);
    assert_eq!(default.len(), 10);
    assert!(
        (default[0] as f64) < 0.9 * total as f64,
        "the first row holds {} of {total}: {default:?}",
        default[0]
    );
    assert!(
        default.iter().filter(|&&c| c > 0).count() >= 5,
        "{default:?}"
    );
    // The tail is in rows of its own.
    assert!(default[default.len() - 1] >= 1, "{default:?}");
    let linear = rows(&["-o", "select", "-p", "--histogram-scale", "linear"]);
    assert!(linear[0] as f64 > 0.999 * total as f64, "{linear:?}");
}

/// Issue 17: the seed was never printed, and the JSON wrote it as a
/// number, which jq and JavaScript round above 2^53: a rerun from the
/// report used another seed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_is_in_the_summary_and_exact_in_the_json() {
    let sb = sandbox();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("given.json");
    let json_s = json.to_str().unwrap();
    let max = u64::MAX.to_string();
    let (_, text) = run_args(
        &sb,
        &["-o", "insert", "-r", "10", "--seed", &max, "--json", json_s],
    )
    .await;
    assert!(
        text.starts_with("seed                  : 18446744073709551615\n"),
        "{text}"
    );
    let raw = std::fs::read_to_string(&json).unwrap();
    assert!(raw.contains("\"seed\": \"18446744073709551615\""), "{raw}");
    let doc: JsonReport = serde_json::from_str(&raw).unwrap();
    assert_eq!(doc.config.seed, u64::MAX);

    // A drawn seed: what the summary says is what the report keeps.
    let json = dir.path().join("drawn.json");
    let (_, text) = run_args(
        &sb,
        &["-o", "insert", "-r", "10", "--json", json.to_str().unwrap()],
    )
    .await;
    let said: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("seed                  : "))
        .expect("a seed line")
        .parse()
        .unwrap();
    let doc: JsonReport = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc.config.seed, said);
}

/// An operation that measured nothing (a failed copy-file) gets no empty
/// picture, and says so.
#[test]
fn no_graph_is_drawn_for_an_operation_that_measured_nothing() {
    let dir = shared_dir();
    let graphs = dir.path().join("graphs");
    let out = bin(
        "ysql-bench",
        &[
            "--sandbox",
            "-o",
            "copy-file",
            "-r",
            "10",
            "--csv-dir",
            dir.path().to_str().unwrap(),
            "--graph",
            "--graph-dir",
            graphs.to_str().unwrap(),
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no graph for copy-file"), "{stderr}");
    // No picture, nor the directory made for the first one.
    assert!(!graphs.exists(), "{stderr}");
}
