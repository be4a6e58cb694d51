#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what is missing, then
# formatting, lints and every test (unit tests and tests against real
# throwaway PostgreSQL servers, haproxy and PgBouncer started by the tests).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --all-targets --locked -- -D warnings
if cargo nextest --version >/dev/null 2>&1; then
    # Tests of all binaries side by side (.config/nextest.toml says why).
    echo "== cargo nextest run"
    cargo nextest run --locked --all-targets
else
    echo "== cargo test (cargo-nextest is not installed: one test binary at a time)"
    cargo test --locked --all-targets
fi
if [ -x bench/compare.sh ]; then
    echo "== bench/compare.sh --quick (proves the benchmark script runs; timings not asserted)"
    bench/compare.sh --quick
    echo "== bench/compare.sh --quick --profile --callgrind (proves the per-point profiles run)"
    bench/compare.sh --quick --only sweep --workloads select --sslmodes disable --pairs 0 --profile --callgrind
fi
if [ -x bench/pgbench_scripts.sh ]; then
    echo "== bench/pgbench_scripts.sh --quick (proves the pgbench-script comparison runs; timings not asserted)"
    bench/pgbench_scripts.sh --quick
fi
if [ -x bench/tpcc.sh ]; then
    echo "== bench/tpcc.sh --quick (proves the TPC-C benchmark script runs; timings not asserted)"
    bench/tpcc.sh --quick
fi
echo "== scripts/docs-commands.sh (every command of README.md and docs/ against a throwaway server)"
# With the debug binaries the tests were built with: the commands check what
# the tool does, not how fast, and a release build (fat LTO) would add about
# four minutes.
cargo build --locked --bins
target=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
scripts/docs-commands.sh --bin-dir "$target/debug"
