//! The container image file and the Kubernetes manifests of
//! `deploy/kubernetes/` (issue 15), checked as far as this machine allows:
//! the manifests against the Kubernetes API schema with the PyPI package
//! `kubernetes-validate` (offline, schemas bundled), their ysql-bench
//! arguments against the real command line, and the Containerfile's
//! stages, user and copied paths. No image is built here (no base image
//! can be pulled).

use std::path::Path;
use std::process::Command;

use clap::Parser;
use ysql_bench::cli::Cli;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/kubernetes");

fn manifests() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(DIR)
        .expect("deploy/kubernetes exists")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| p.display().to_string())
        .collect();
    v.sort();
    v
}

/// `kubernetes-validate`, installed with pip when missing; None (and a
/// line saying why) when it cannot be had here.
fn validator() -> Option<Command> {
    let found = |c: &str| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !found("kubernetes-validate") {
        let _ = Command::new("python3")
            .args(["-m", "pip", "install", "-q", "kubernetes-validate"])
            .output();
    }
    if found("kubernetes-validate") {
        return Some(Command::new("kubernetes-validate"));
    }
    eprintln!(
        "skipped: kubernetes-validate is not installed and pip could not install it (pip install kubernetes-validate)"
    );
    None
}

#[test]
fn manifests_validate_against_the_kubernetes_schema() {
    let files = manifests();
    assert!(files.len() >= 4, "{files:?}");
    let Some(mut v) = validator() else { return };
    let out = v.arg("--strict").args(&files).output().expect("runs");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{all}");
    for f in &files {
        let name = Path::new(f)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_string();
        assert!(all.contains(&format!("{name} passed")), "{name}: {all}");
    }
}

/// The arguments of the Indexed Job's container, as ysql-bench would get
/// them, read with Python's yaml module (the validator's dependency).
fn job_args(file: &str) -> Option<Vec<String>> {
    let script = "import sys, json, yaml\n\
        d = yaml.safe_load(open(sys.argv[1]))\n\
        s = d['spec']\n\
        assert s['completionMode'] == 'Indexed', s\n\
        assert s['parallelism'] == s['completions'], s\n\
        c = s['template']['spec']['containers'][0]\n\
        env = {e['name']: e for e in c.get('env', [])}\n\
        assert 'secretKeyRef' in env['PGPASSWORD']['valueFrom'], env\n\
        print(json.dumps([s['completions']] + c['args']))";
    let out = Command::new("python3")
        .args(["-c", script, file])
        .output()
        .ok()?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("No module named 'yaml'") {
            eprintln!("skipped: python3 has no yaml module (pip install pyyaml)");
            return None;
        }
        panic!("{file}: {err}");
    }
    let v: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("json");
    let mut args = vec![v[0].to_string()];
    args.extend(
        v[1..]
            .iter()
            .map(|a| a.as_str().unwrap_or_default().to_string()),
    );
    Some(args)
}

#[test]
fn the_job_runs_a_command_line_ysql_bench_accepts_with_clients_equal_to_completions() {
    let Some(args) = job_args(&format!("{DIR}/job.yaml")) else {
        return;
    };
    let completions = args[0].clone();
    let mut argv = vec!["ysql-bench".to_string()];
    argv.extend(args[1..].iter().map(|a| a.replace("$(CLIENT)", "1")));
    assert!(
        !argv.iter().any(|a| a.contains("password")),
        "no password on the command line: {argv:?}"
    );
    let cli = Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{e}: {argv:?}"));
    assert_eq!(cli.clients.to_string(), completions);
    assert!(cli.json.is_some());
}

#[test]
fn the_containerfile_builds_both_binaries_in_two_stages_and_runs_as_non_root() {
    let root = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(format!("{root}/Containerfile")).expect("Containerfile");
    let froms: Vec<&str> = text.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(froms.len(), 2, "{froms:?}");
    assert!(froms[0].contains(" AS build"), "{froms:?}");
    let user = text
        .lines()
        .rev()
        .find(|l| l.starts_with("USER "))
        .expect("a USER line");
    assert!(!user.contains("root") && !user.ends_with(" 0"), "{user}");
    // Every path copied from the build context exists.
    for line in text
        .lines()
        .filter(|l| l.starts_with("COPY ") && !l.contains("--from"))
    {
        let words: Vec<&str> = line.split_whitespace().collect();
        for src in &words[1..words.len() - 1] {
            assert!(Path::new(root).join(src).exists(), "{line}: {src} missing");
        }
    }
    // The binaries of Cargo.toml, as the image copies them.
    for bin in ["ysql-bench", "csv_generator"] {
        assert!(text.contains(&format!("target/release/{bin}")), "{bin}");
    }
    // The Rust version of the build stage is at least the crate's.
    let cargo = std::fs::read_to_string(format!("{root}/Cargo.toml")).unwrap();
    let need = cargo
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .map(|v| v.trim_matches('"').to_string())
        .expect("rust-version");
    assert!(
        froms[0].contains(&format!("rust:{need}")),
        "{} vs {need}",
        froms[0]
    );
}

/// Issue 27: each Job serves --metrics-addr on the port its pod declares
/// as `metrics` and its scrape annotations name, and the PodMonitor
/// example selects the Job's pods by their labels and that port's name.
#[test]
fn the_jobs_serve_metrics_on_the_port_the_annotations_and_the_pod_monitor_name() {
    let script = "import sys, json, yaml\n\
        out = []\n\
        for f in sys.argv[2:]:\n\
        \x20   d = yaml.safe_load(open(f))\n\
        \x20   t = d['spec']['template']\n\
        \x20   c = t['spec']['containers'][0]\n\
        \x20   a = t['metadata']['annotations']\n\
        \x20   ports = {p['name']: p['containerPort'] for p in c.get('ports', [])}\n\
        \x20   args = ' '.join(c.get('args', []))\n\
        \x20   out.append([f, args, ports.get('metrics'), a.get('prometheus.io/port'), a.get('prometheus.io/scrape'), t['metadata']['labels']])\n\
        m = yaml.safe_load(open(sys.argv[1]))\n\
        print(json.dumps([m['spec']['selector']['matchLabels'], [e['port'] for e in m['spec']['podMetricsEndpoints']], out]))";
    let out = Command::new("python3")
        .args([
            "-c",
            script,
            &format!("{DIR}/monitoring/podmonitor.yaml"),
            &format!("{DIR}/job.yaml"),
            &format!("{DIR}/job-haproxy.yaml"),
        ])
        .output()
        .expect("python3 runs");
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("No module named 'yaml'") {
        eprintln!("skipped: python3 has no yaml module (pip install pyyaml)");
        return;
    }
    assert!(out.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let selector = v[0].as_object().expect("matchLabels");
    assert_eq!(v[1], serde_json::json!(["metrics"]));
    for job in v[2].as_array().unwrap() {
        let (file, args) = (&job[0], job[1].as_str().unwrap());
        let port = job[2]
            .as_u64()
            .unwrap_or_else(|| panic!("{file}: no metrics port"));
        assert!(
            args.contains(&format!("--metrics-addr 0.0.0.0:{port}")),
            "{file}: {args}"
        );
        assert_eq!(job[3], port.to_string(), "{file}: annotation");
        assert_eq!(job[4], "true", "{file}");
        for (k, want) in selector {
            assert_eq!(&job[5][k], want, "{file}: label {k}");
        }
    }
}
