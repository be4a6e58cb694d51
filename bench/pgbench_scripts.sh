#!/usr/bin/env bash
# Side-by-side benchmark of ysql-bench's pgbench scripts against pgbench
# itself (issue 14), on one throwaway PostgreSQL server both tools share.
#
# Loads pgbench's tables both ways (pgbench -i, ysql-bench -o pgbench-init),
# then runs pgbench's built-in select-only and TPC-B-like scripts through
# pgbench (-M prepared, -j = cores, -n: no vacuum before the run) and
# through ysql-bench (--builtin, the same script text), alternately
# (A B A B ...) so that drift in the machine's load hits both alike.
# Transactions are counted on the server (commits of the bench database for
# select-only, pgbench_history rows for TPC-B-like) as well as by each tool;
# client CPU is user+system time of the client process (GNU time) per
# server-counted transaction, peak RSS is GNU time's %M. Prints the medians
# and the ratios ysql-bench / pgbench as a Markdown block for
# bench/RESULTS.md.
#
#   bench/pgbench_scripts.sh            full run (about 6 minutes)
#   bench/pgbench_scripts.sh --quick    tiny scale, 1 s runs, one repetition:
#                                       proves the script works, asserts nothing
#   options: --reps N  --clients N  --record FILE (append the results)  --bin-dir DIR
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# median, the throwaway server (find_pg_bin, server_init, server_start), run, field
. "$here/lib.sh"
repo=$(cd "$here/.." && pwd)

quick=0
reps=""
record=""
bin_dir=""
clients=4
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1 ;;
        --reps) reps=${2:?--reps needs a number}; shift ;;
        --clients) clients=${2:?--clients needs a number}; shift ;;
        --record) record=${2:?--record needs a file}; shift ;;
        --bin-dir) bin_dir=${2:?--bin-dir needs a directory}; shift ;;
        -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "error: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

if [ "$quick" = 1 ]; then
    scale=1; secs=1; reps=${reps:-1}; profile=debug
else
    scale=10; secs=15; reps=${reps:-3}; profile=release
fi
case "$reps" in ''|*[!0-9]*|0) echo "error: --reps must be a whole number of at least 1" >&2; exit 2 ;; esac
case "$clients" in ''|*[!0-9]*|0) echo "error: --clients must be a whole number of at least 1" >&2; exit 2 ;; esac
cores=$(nproc)
load_before=$(cut -d" " -f1-3 /proc/loadavg)

# --- tools -------------------------------------------------------------------
[ -x /usr/bin/time ] || { echo "error: /usr/bin/time (GNU time) not found: install the 'time' package (scripts/install-deps.sh)" >&2; exit 1; }
find_pg_bin
pgbench=$(tool pgbench)
psql=$(tool psql)
[ -n "$pgbench" ] && [ -n "$psql" ] ||
    { echo "error: pgbench and psql are needed (scripts/install-deps.sh installs them)" >&2; exit 1; }

build="$profile build"
if [ -n "$bin_dir" ]; then
    build="binaries from $bin_dir"
else
    if [ "$profile" = release ]; then
        (cd "$repo" && cargo build --release --locked --bins >&2)
    else
        (cd "$repo" && cargo build --locked --bins >&2)
    fi
    bin_dir=$(cd "$repo" && cargo metadata --format-version 1 --no-deps 2>/dev/null |
        sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')/$profile
fi
ysql=$bin_dir/ysql-bench
[ -x "$ysql" ] || { echo "error: no ysql-bench in $bin_dir" >&2; exit 1; }
# The client's own cost, as pgbench's: without the server-statistics
# connection and its wait sampler (which also adds commits of its own).
quiet_server=()
if "$ysql" --help | grep -q -- '--no-server-stats'; then quiet_server=(--no-server-stats); fi

# --- the server (as bench/compare.sh starts it) ------------------------------------
work=$(mktemp -d /tmp/ysql-bench-pgbench.XXXXXX)
trap server_cleanup EXIT
trap 'exit 130' INT TERM

server_init

# Durable (fsync on), but commits do not wait for the WAL flush, so that the
# TPC-B-like runs measure the clients rather than the disk's fsync latency.
server_settings=(-c listen_addresses=127.0.0.1 -c max_connections=100
    -c synchronous_commit=off -c shared_buffers=1GB -c max_wal_size=4GB)
server_start "${server_settings[@]}"

# The runs go to database bench; the counting is done from postgres, so that
# reading the counts adds no commit to bench.
url="host=127.0.0.1 port=$port user=postgres dbname=bench"
pg_conn=(-h 127.0.0.1 -p "$port" -U postgres)
sql() { "$psql" "${pg_conn[@]}" -d "${2:-postgres}" -X -q -A -t -v ON_ERROR_STOP=1 -c "$1"; }
sql "create database bench" >/dev/null

# --- measuring ------------------------------------------------------------------
# The commits of database bench, once the run's sessions have ended and the
# statistics they flush at exit have settled.
commits() {
    local last=-1 n
    for _ in $(seq 1 100); do
        n=$(sql "select pg_stat_clear_snapshot(); select xact_commit from pg_stat_database where datname = 'bench'" | tail -n 1)
        if [ "$(sql "select count(*) from pg_stat_activity where datname = 'bench'")" = 0 ] && [ "$n" = "$last" ]; then
            echo "$n"; return
        fi
        last=$n
        sleep 0.3
    done
    echo "$last"
}
history_rows() { sql "select count(*) from pgbench_history" bench; }
div() { awk -v a="$1" -v b="$2" -v s="${3:-1}" -v f="${4:-%.2f}" 'BEGIN { if (b > 0) printf f, a * s / b; else print "n/a" }'; }
num() { awk -v a="$1" 'BEGIN { printf "%.1f", a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

results=()
row() { results+=("| $1 | $2 | $3 | $4 | $5 |"); }
say() { echo ">> $*" >&2; }

# --- loading pgbench's tables ----------------------------------------------------
yl=() pl=()
for i in $(seq 1 "$reps"); do
    say "load $i/$reps: ysql-bench -o pgbench-init -s $scale -t $cores"
    sql "drop table if exists pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history; checkpoint" bench >/dev/null
    run "init-y$i" "$ysql" -u "$url" -q -o pgbench-init -s "$scale" -t "$cores" "${quiet_server[@]}"
    yl+=("$WALL")
    say "load $i/$reps: pgbench -i -s $scale"
    sql "drop table if exists pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history; checkpoint" bench >/dev/null
    run "init-p$i" "$pgbench" "${pg_conn[@]}" -i -q -s "$scale" bench
    pl+=("$WALL")
done
a=$(median "${yl[@]}"); b=$(median "${pl[@]}")
row "load scale $scale ($((scale * 100000)) accounts, keys, vacuum): seconds, whole process" "$a (-t $cores)" "$b (pgbench -i)" "$(ratio "$a" "$b")" "${yl[*]} / ${pl[*]}"

# The last load was pgbench -i's: both tools run on the same tables.
# --- the scripts -----------------------------------------------------------------
# pair NAME: the built-in NAME through ysql-bench and pgbench, alternately.
pair() {
    local name=$1 i
    local yt=() yc=() yr=() pt=() pc=() pr=() ychk=() pchk=()
    for i in $(seq 1 "$reps"); do
        local before after n tool_n
        say "$name $i/$reps: ysql-bench"
        before=$( [ "$name" = select-only ] && commits || history_rows )
        run "$name-y$i" "$ysql" -u "$url" -q --builtin "$name" -t "$clients" --time "${secs}s" "${quiet_server[@]}"
        after=$( [ "$name" = select-only ] && commits || history_rows )
        n=$((after - before))
        tool_n=$(field "$work/$name-y$i.out" "nr txns")
        yt+=("$(field "$work/$name-y$i.out" "txns/s")"); yc+=("$(div "$CPU" "$n" 1e6)"); yr+=("$(div "$RSS_KB" 1024 1 %.1f)")
        ychk+=("$tool_n/$n")
        say "$name $i/$reps: pgbench"
        before=$( [ "$name" = select-only ] && commits || history_rows )
        run "$name-p$i" "$pgbench" "${pg_conn[@]}" -n -M prepared -b "$name" -c "$clients" -j "$cores" -T "$secs" bench
        after=$( [ "$name" = select-only ] && commits || history_rows )
        n=$((after - before))
        tool_n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/$name-p$i.out")
        pt+=("$(num "$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/$name-p$i.out")")"); pc+=("$(div "$CPU" "$n" 1e6)"); pr+=("$(div "$RSS_KB" 1024 1 %.1f)")
        pchk+=("$tool_n/$n")
    done
    local a b
    a=$(median "${yt[@]}"); b=$(median "${pt[@]}")
    row "$name, $clients clients, ${secs} s: transactions/s" "$a" "$b (pgbench -M prepared -j $cores)" "$(ratio "$a" "$b")" "${yt[*]} / ${pt[*]}"
    a=$(median "${yc[@]}"); b=$(median "${pc[@]}")
    row "$name: client CPU µs/transaction" "$a" "$b" "$(ratio "$a" "$b")" "${yc[*]} / ${pc[*]}"
    a=$(median "${yr[@]}"); b=$(median "${pr[@]}")
    row "$name: peak RSS MB" "$a" "$b" "$(ratio "$a" "$b")" "${yr[*]} / ${pr[*]}"
    row "$name: transactions the tool counted / the server counted" "${ychk[*]}" "${pchk[*]}" "–" ""
}

pair select-only
pair tpcb-like

# --- report -------------------------------------------------------------------------------------
server_version=$(sql "show server_version")
mode=full; [ "$quick" = 1 ] && mode="quick (sizes too small for the figures to mean anything)"
{
    echo "### pgbench scripts: $(date -u '+%Y-%m-%d %H:%M UTC'), $mode"
    echo
    echo "- machine: $cores cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), load average before the run: $load_before"
    echo "- server: PostgreSQL $server_version on 127.0.0.1 (TCP), ${server_settings[*]}"
    echo "- clients: ysql-bench $("$ysql" --version | awk '{ print $2 }') ($build, commit $(cd "$repo" && git describe --always --dirty 2>/dev/null || echo '?'), ${quiet_server[*]:-with server statistics}), $("$pgbench" --version)"
    echo "- $reps repetition(s) per pair, alternating; medians shown, every run listed as ysql-bench / pgbench; transactions counted on the server (commits for select-only, pgbench_history rows for tpcb-like)"
    echo
    echo "| figure | ysql-bench | pgbench | ratio | runs |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${results[@]}"
} >"$work/report.md"
cat "$work/report.md"
if [ -n "$record" ]; then
    { echo; cat "$work/report.md"; } >>"$record"
    say "appended to $record"
fi
