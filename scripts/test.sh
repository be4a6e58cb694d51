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
echo "== cargo test"
cargo test --locked --all-targets
if [ -x bench/compare.sh ]; then
    echo "== bench/compare.sh --quick (proves the benchmark script runs; timings not asserted)"
    bench/compare.sh --quick
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
scripts/docs-commands.sh
