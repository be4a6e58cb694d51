//! What a new user meets first (issue 17): the README's first screen, the
//! Rust version it asks for, and the quick start script.

mod common;
use common::*;

const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{MANIFEST_DIR}/{path}")).expect("a file of the repository")
}

/// `rust-version` of Cargo.toml, as (major, minor).
fn declared_rust_version() -> (u32, u32) {
    let toml = read("Cargo.toml");
    let line = toml
        .lines()
        .find(|l| l.starts_with("rust-version"))
        .expect("Cargo.toml sets rust-version");
    version_of(line).expect("a rust-version such as \"1.88\"")
}

/// The first `"X.Y"` or `"X.Y.Z"` in a line, as (X, Y).
fn version_of(line: &str) -> Option<(u32, u32)> {
    let quoted = line.split('"').nth(1)?;
    let mut parts = quoted.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Issue 17: nothing said how to get the binary or which Rust it needs
/// (edition 2024 and no rust-version: an older toolchain failed
/// cryptically). The first screen says it, then loads and runs.
#[test]
fn the_readmes_first_screen_says_how_to_install_load_and_run() {
    let (major, minor) = declared_rust_version();
    let readme = read("README.md");
    let first_screen: String = readme.lines().take(30).collect::<Vec<_>>().join("\n");
    for needed in [
        format!("Rust {major}.{minor}"),
        "cargo install --path . --locked".to_string(),
        "-o copy-mem".to_string(),
        "-o select".to_string(),
        "scripts/quickstart.sh".to_string(),
    ] {
        assert!(
            first_screen.contains(&needed),
            "the README's first 30 lines do not say {needed}:\n{first_screen}"
        );
    }
}

/// The declared rust-version is no older than any dependency's in
/// Cargo.lock (read from cargo's registry sources, where the build put
/// them): otherwise a user on the declared version fails on a dependency.
#[test]
fn rust_version_is_at_least_every_dependencys() {
    let ours = declared_rust_version();
    let home = std::env::var("CARGO_HOME")
        .unwrap_or_else(|_| format!("{}/.cargo", std::env::var("HOME").unwrap_or_default()));
    let registries: Vec<std::path::PathBuf> = std::fs::read_dir(format!("{home}/registry/src"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    let lock = read("Cargo.lock");
    let mut checked = 0;
    let mut newer = Vec::new();
    for package in lock.split("[[package]]").skip(1) {
        let field = |key: &str| {
            package
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{key} = \"")))
                .map(|v| v.trim_end_matches('"').to_string())
        };
        let (Some(name), Some(version)) = (field("name"), field("version")) else {
            continue;
        };
        for reg in &registries {
            let Ok(toml) =
                std::fs::read_to_string(reg.join(format!("{name}-{version}/Cargo.toml")))
            else {
                continue;
            };
            checked += 1;
            if let Some(theirs) = toml
                .lines()
                .find(|l| l.starts_with("rust-version"))
                .and_then(version_of)
                && theirs > ours
            {
                newer.push(format!("{name} {version} needs {}.{}", theirs.0, theirs.1));
            }
            break;
        }
    }
    assert!(
        checked >= 50,
        "only {checked} dependencies found under {home}/registry/src: build first"
    );
    assert!(
        newer.is_empty(),
        "rust-version {}.{} is too old: {newer:?}",
        ours.0,
        ours.1
    );
}

/// Issue 17: quickstart.sh ran ./target/release/ysql-bench, so it failed
/// after a 3-minute build whenever CARGO_TARGET_DIR was set. Here a
/// stand-in for cargo (the real build is the test's own binary) shows the
/// script asks cargo to run what it built, from any directory, with the
/// build directory elsewhere, and that the demo runs.
#[test]
fn the_quick_start_runs_wherever_cargo_puts_its_build() {
    use std::os::unix::fs::PermissionsExt;
    let stubs = tempfile::tempdir().unwrap();
    let cargo = stubs.path().join("cargo");
    std::fs::write(
        &cargo,
        r#"#!/bin/sh
# Stands in for cargo: notes its arguments; a build has nothing to do,
# and what follows "--" of a run goes to the binary already built.
printf '%s\n' "$*" >> "$STUB_CARGO_LOG"
while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done
[ $# -gt 0 ] || exit 0
shift
exec "$STUB_YSQL_BENCH" "$@"
"#,
    )
    .unwrap();
    std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    let log = stubs.path().join("cargo.log");
    let build_dir = tempfile::tempdir().unwrap();
    let path = format!(
        "{}:{}",
        stubs.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new(format!("{MANIFEST_DIR}/scripts/quickstart.sh"))
        .current_dir(build_dir.path())
        .env("PATH", path)
        .env("CARGO_TARGET_DIR", build_dir.path())
        .env("STUB_CARGO_LOG", &log)
        .env("STUB_YSQL_BENCH", env!("CARGO_BIN_EXE_ysql-bench"))
        .env_remove("YSQLBENCH_URL")
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains("total rows            : 200000"),
        "{stdout}"
    );
    assert!(stdout.contains("== select =="), "{stdout}");
    let asked = std::fs::read_to_string(&log).unwrap();
    assert!(asked.contains("--release"), "{asked}");
}
