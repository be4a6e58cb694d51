#!/usr/bin/env bash
# Runs every command of README.md, CONTRIBUTING.md and docs/*.md against a
# throwaway PostgreSQL server, so that what the documents show works
# verbatim. Run by scripts/test.sh.
#
#   scripts/docs-commands.sh [--bin-dir DIR] [--budget SECONDS] [FILE.md ...]
#
# What runs: each ```sh block, as one bash script (set -e), in the order of
# the documents (README.md first, then docs/ in the order of the README's
# table, then CONTRIBUTING.md), in one working directory shared by all, with
# PGHOST, PGPORT, PGUSER and PGDATABASE naming the throwaway server, so that
# commands written without -u (or with -u 'host=127.0.0.1 user=postgres')
# reach it. `ysql-bench` and `csv_generator` are the freshly built binaries,
# each call under a budget (--budget, 18 s): a call still running then is
# interrupted as a person would (SIGINT) and must then end with the
# interrupted code, 130, having written its reports; any other call must end
# with 0. A block preceded by a line `<!-- not run: REASON -->` is skipped
# (it needs a cluster, Kubernetes, or would install things), and the reason
# is listed. Output blocks (```text) are not commands.
#
# Why a script and not a Rust test: the commands are shell (heredocs, `&`
# and `wait`, pipes), run with the release binaries that bench/ builds (or,
# from scripts/test.sh, the debug ones the tests ran: --bin-dir), and
# their documents change without a rebuild.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
# find_pg_bin, server_init, server_start, stop_server
. "$repo/bench/lib.sh"

bin_dir=""
budget=18
docs=()
while [ $# -gt 0 ]; do
    case "$1" in
        --bin-dir) bin_dir=${2:?--bin-dir needs a directory}; shift 2 ;;
        --budget) budget=${2:?--budget needs seconds}; shift 2 ;;
        -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "error: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) docs+=("$1"); shift ;;
    esac
done
case "$budget" in ''|*[!0-9]*|0) echo "error: --budget must be a whole number of seconds" >&2; exit 2 ;; esac
if [ ${#docs[@]} -eq 0 ]; then
    docs=(README.md)
    # docs/ in the order the README's table lists them, then any it does not
    while read -r d; do docs+=("$d"); done < <(grep -o '(docs/[a-z-]*\.md)' "$repo/README.md" | tr -d '()' | awk '!seen[$0]++')
    for d in "$repo"/docs/*.md; do
        d=docs/$(basename "$d")
        printf '%s\n' "${docs[@]}" | grep -qx "$d" || docs+=("$d")
    done
    docs+=(CONTRIBUTING.md)
fi

if [ -z "$bin_dir" ]; then
    (cd "$repo" && cargo build --release --locked --bins >&2)
    bin_dir=$(cd "$repo" && cargo metadata --format-version 1 --no-deps 2>/dev/null |
        sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')/release
fi
[ -x "$bin_dir/ysql-bench" ] && [ -x "$bin_dir/csv_generator" ] ||
    { echo "error: no ysql-bench/csv_generator in $bin_dir" >&2; exit 1; }
bin_dir=$(cd "$bin_dir" && pwd)

# --- the server ------------------------------------------------------------------
find_pg_bin
work=$(mktemp -d /tmp/ysql-bench-docs.XXXXXX)
trap server_cleanup EXIT
trap 'exit 130' INT TERM
server_init
# Room for the documents' connection counts; fsync off, since nothing here
# is measured and the runs should be quick.
server_start -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off \
    -c synchronous_commit=off -c shared_buffers=256MB -c max_wal_size=4GB
export PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres PGDATABASE=postgres
unset YSQLBENCH_URL PGPASSWORD PGSERVICE 2>/dev/null || true

# The working directory of the commands: world-writable, since server-side
# COPY (copy-file) reads CSV files from it as the server's user; the
# examples are there as in a clone.
cwd=$work/cwd
mkdir -m 0777 "$cwd"
ln -s "$repo/examples" "$cwd/examples"
calls=$work/calls.log
: >"$calls"

# The wrappers every block sees: each call of the tools runs under the
# budget in its own process group (timeout's), so the SIGINT reaches that
# call alone; its exit code and whether the budget ran out go to $calls.
cat >"$work/prelude.sh" <<EOF
set -eo pipefail
_docs_call() {
    local bin=\$1; shift
    local t0 rc=0 flag=$work/budget.\$\$.\$RANDOM
    t0=\$(date +%s)
    timeout -s INT -k 30 --preserve-status $budget "\$bin" "\$@" || rc=\$?
    if [ \$((\$(date +%s) - t0)) -ge $budget ]; then flag=budget; else flag=done; fi
    printf '%s\t%s\t%s\n' "\$rc" "\$flag" "\$(basename "\$bin") \$*" >>"$calls"
    if [ "\$rc" = 0 ] || { [ "\$rc" = 130 ] && [ "\$flag" = budget ]; }; then return 0; fi
    return "\$rc"
}
ysql-bench() { _docs_call "$bin_dir/ysql-bench" "\$@"; }
csv_generator() { _docs_call "$bin_dir/csv_generator" "\$@"; }
EOF

# --- the blocks ------------------------------------------------------------------
passed=0
failed=0
skipped=()
failures=()
for doc in "${docs[@]}"; do
    [ -f "$repo/$doc" ] || { echo "error: $doc: no such document" >&2; exit 2; }
    # Split the document into its ```sh blocks: block N goes to $work/blocks/DOC.N
    # with its first line in the document; a block after a not-run comment
    # gets a .skip file with the reason.
    out=$work/blocks/$(echo "$doc" | tr / _)
    mkdir -p "$(dirname "$out")"
    awk -v out="$out" '
        /^<!-- not run: .* -->$/ { reason = $0; sub(/^<!-- not run: /, "", reason); sub(/ -->$/, "", reason); next }
        /^```sh$/ && !inblock { inblock = 1; n++; file = out "." n; printf "" > file; print NR > (file ".line")
            if (reason != "") print reason > (file ".skip"); reason = ""; next }
        /^```/ && inblock { inblock = 0; close(file); next }
        inblock { print >> file; next }
        /[^ \t]/ { reason = "" }
    ' "$repo/$doc"
    n=0
    while [ -f "$out.$((n + 1))" ]; do
        n=$((n + 1))
        block=$out.$n
        line=$(cat "$block.line")
        if [ -f "$block.skip" ]; then
            skipped+=("$doc:$line: $(cat "$block.skip")")
            continue
        fi
        before=$(wc -l <"$calls")
        echo "== $doc:$line" >&2
        sed 's/^/   /' "$block" >&2
        rc=0
        (cd "$cwd" && bash -c ". '$work/prelude.sh'; . '$block'; wait") >"$work/block.out" 2>&1 || rc=$?
        # Calls made in the background (`&`) are checked here too.
        bad=$(tail -n +"$((before + 1))" "$calls" | awk -F'\t' '!($1 == 0 || ($1 == 130 && $2 == "budget"))')
        ncalls=$(($(wc -l <"$calls") - before))
        if [ "$rc" = 0 ] && [ -z "$bad" ] && [ "$ncalls" -gt 0 ]; then
            passed=$((passed + 1))
            echo "   ok: $ncalls call(s)$(tail -n +"$((before + 1))" "$calls" | awk -F'\t' '$2 == "budget" { n++ } END { if (n) printf ", %d interrupted at the %s s budget", n, b }' b="$budget")" >&2
        else
            failed=$((failed + 1))
            why="exit $rc"
            [ "$ncalls" -gt 0 ] || why="no ysql-bench or csv_generator call in it (mark it <!-- not run: ... --> if it is not meant to run)"
            [ -z "$bad" ] || why="$why; failed calls: $(echo "$bad" | awk -F'\t' '{ printf "[exit %s] %s; ", $1, $3 }')"
            failures+=("$doc:$line: $why")
            echo "   FAILED: $why" >&2
            tail -n 30 "$work/block.out" | sed 's/^/   | /' >&2
        fi
    done
done

echo >&2
for s in "${skipped[@]}"; do echo "not run: $s" >&2; done
for f in "${failures[@]}"; do echo "FAILED: $f" >&2; done
echo "docs: $passed passed, $failed failed, ${#skipped[@]} skipped"
[ "$failed" = 0 ]
