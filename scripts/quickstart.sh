#!/usr/bin/env bash
# Installs PostgreSQL's server binaries when missing (all that --sandbox
# needs), builds, and runs a demo on a throwaway local PostgreSQL: a
# copy-mem load of 200,000 rows, then 10 s of selects. Extra arguments go
# to ysql-bench.
#
# cargo runs the binary it built, wherever it put it (CARGO_TARGET_DIR or
# a configured build directory), so no path under ./target is assumed.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh --sandbox-only
cargo run --release --locked --bin ysql-bench -- \
    --sandbox -o copy-mem,select -t 2 -r 200000 -b 1000 --time 10s "$@"
