#!/usr/bin/env bash
# Installs what is missing, builds, and runs a demo on a throwaway local
# PostgreSQL: a copy-mem load of 200,000 rows, then 10 s of selects.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cargo build --release --locked
./target/release/ysql-bench --sandbox -o copy-mem,select -t 2 -r 200000 -b 1000 --time 10s "$@"
