//! Puts the commit into the version (`ysql-bench 0.2.0 (abc1234)`), so that
//! a report or a bug says which code it came from.
//!
//! The short hash comes from `git rev-parse --short HEAD`; without git or
//! without a repository (a source tarball) it is "unknown" and the build
//! goes on. The script runs again when HEAD moves (a commit, a checkout),
//! including in a `git worktree`, whose HEAD is not under `./.git`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!text.is_empty()).then_some(text)
}

fn main() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| ".".into()));
    println!("cargo:rerun-if-changed=build.rs");
    let commit = git(&dir, &["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    // HEAD itself, the branch it points to, and packed-refs (where a
    // branch's commit may live instead): a change to any is a new commit.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(&dir, &["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(&dir, &["rev-parse", "--git-path", &name]) {
            let path = dir.join(path);
            // A path that does not exist would make cargo run this script
            // on every build.
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    println!("cargo:rustc-env=YSQLBENCH_COMMIT={commit}");
}
