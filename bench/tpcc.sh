#!/usr/bin/env bash
# TPC-C on one throwaway PostgreSQL server (issue 13): how fast tpcc-load
# loads, against copy-mem and psql \copy on the same server, and the tpmC
# and client CPU per New-Order of tpcc.
#
# Load: tpcc-load of W warehouses (-t 1 and -t 4), then the same rows
# dumped to CSV files and loaded back into the emptied tables by one psql
# (\copy, one table after another, one connection), and copy-mem of as
# many rows into test_table (-t 1 and -t 4) with psql \copy of its CSV.
# rows/s of the tools from their summaries; psql's over its whole process;
# MB/s of the CSV text; client CPU is user+system time (GNU time) per row.
#
# Run: tpcc with -t 4 terminals on W warehouses, no keying and think times,
# without the server-statistics connection (its sampler costs client CPU).
# New-Orders are counted on the server (orders rows added), transactions as
# the database's commits; client CPU per New-Order is GNU time's user+system
# of the client over those New-Orders. tpcc-check must hold after the runs.
# Prints the medians as Markdown that can go into bench/RESULTS.md.
#
# Terminals (issue 28): the client's peak RSS with 10,000 idle terminals
# (waits ten times the specification's, so none is ready in the run)
# against 10 terminals; target: 10,000 terminals add at most 8 MB and the
# client stays within 64 MB. With --waits W instead of the load and tpmC
# measurements: W warehouses loaded, then one tpcc run with the
# specification's keying and think times (10 terminals per warehouse) over
# --connections connections, a warmup and --minutes measured; it reports
# tpmC, efficiency, NOPM against the server's count, the queueing, the
# server's CPU (the postmaster and its processes, from /proc) and the
# client's (GNU time), and the most backends of the run seen at once
# (pg_stat_activity, sampled every 5 s).
#
#   bench/tpcc.sh                full run: loads of 1 and 4 warehouses,
#                                30 s runs on 1 and 4, 3 repetitions
#                                (about 15 minutes; release build)
#   bench/tpcc.sh --quick        1 warehouse loaded, 3 s runs on 1 and 2,
#                                one repetition, a 5 s run with waits 20
#                                times shorter, debug build: proves the
#                                script works, asserts nothing about speed
#   bench/tpcc.sh --waits 100    100 warehouses, 1 minute's warmup and 10
#                                measured with the specification's waits
#   options: --reps N            repetitions of each measurement (3)
#            --secs S            seconds per tpcc run (30)
#            --terminals N       tpcc's -t (4)
#            --waits W           the run with the waits, on W warehouses
#            --minutes M         its measured minutes (10)
#            --connections C     its -t (8)
#            --record FILE       append the results to FILE
#            --bin-dir DIR       use the binaries in DIR, build nothing
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# median, the throwaway server (find_pg_bin, server_init, server_start), run, field
. "$here/lib.sh"
repo=$(cd "$here/.." && pwd)

quick=0
reps=""
secs=""
terminals=4
waits=""
minutes=10
connections=8
record=""
bin_dir=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1 ;;
        --reps) reps=${2:?--reps needs a number}; shift ;;
        --secs) secs=${2:?--secs needs a number}; shift ;;
        --terminals) terminals=${2:?--terminals needs a number}; shift ;;
        --waits) waits=${2:?--waits needs a number of warehouses}; shift ;;
        --minutes) minutes=${2:?--minutes needs a number}; shift ;;
        --connections) connections=${2:?--connections needs a number}; shift ;;
        --record) record=${2:?--record needs a file}; shift ;;
        --bin-dir) bin_dir=${2:?--bin-dir needs a directory}; shift ;;
        -h|--help) sed -n '2,50p' "$0" | sed -n '/^#/p' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "error: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

if [ "$quick" = 1 ]; then
    load_ws="1"; run_ws="1 2"; secs=${secs:-3}; reps=${reps:-1}; profile=debug
else
    load_ws="1 4"; run_ws="1 4"; secs=${secs:-30}; reps=${reps:-3}; profile=release
fi
num_ok() { case "$1" in ''|*[!0-9]*|0) return 1 ;; esac; }
num_ok "$reps" || { echo "error: --reps must be a whole number of at least 1" >&2; exit 2; }
num_ok "$secs" || { echo "error: --secs must be a whole number of at least 1" >&2; exit 2; }
num_ok "$terminals" || { echo "error: --terminals must be a whole number of at least 1" >&2; exit 2; }
[ -z "$waits" ] || num_ok "$waits" || { echo "error: --waits must be a whole number of warehouses, at least 1" >&2; exit 2; }
num_ok "$minutes" || { echo "error: --minutes must be a whole number of at least 1" >&2; exit 2; }
num_ok "$connections" || { echo "error: --connections must be a whole number of at least 1" >&2; exit 2; }
if [ -n "$waits" ]; then load_ws=""; run_ws=""; fi
load_threads=4
seed=42
cores=$(nproc)
load_before=$(cut -d" " -f1-3 /proc/loadavg)
tables="warehouse district customer history new_order orders order_line item stock"

# --- tools -------------------------------------------------------------------
[ -x /usr/bin/time ] || { echo "error: /usr/bin/time (GNU time) not found: install the 'time' package (scripts/install-deps.sh)" >&2; exit 1; }
find_pg_bin
# psql itself, not Debian's wrapper, so that GNU time measures it.
psql=$(tool psql)
[ -n "$psql" ] || { echo "error: psql is needed (scripts/install-deps.sh installs it)" >&2; exit 1; }

build="$profile build"
if [ -n "$bin_dir" ]; then
    build="binaries from $bin_dir"
else
    flags=(--locked --bins)
    [ "$profile" = release ] && flags+=(--release)
    (cd "$repo" && cargo build "${flags[@]}" >&2)
    bin_dir=$(cd "$repo" && cargo metadata --format-version 1 --no-deps 2>/dev/null |
        sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')/$profile
fi
ysql=$bin_dir/ysql-bench
[ -x "$ysql" ] || { echo "error: no ysql-bench in $bin_dir" >&2; exit 1; }
"$ysql" --help | grep -q -- '--warehouses' ||
    { echo "error: $ysql has no TPC-C (--warehouses): build it from a commit with issue 13" >&2; exit 1; }

# --- the server (as bench/compare.sh starts it) ------------------------------------
work=$(mktemp -d /tmp/ysql-bench-tpcc.XXXXXX)
trap server_cleanup EXIT
trap 'exit 130' INT TERM

server_init
mkdir -p "$work/csv"

# Durable (fsync on), but commits do not wait for the WAL flush, so that the
# runs measure the client and the server's work rather than the disk's fsync
# latency; shared_buffers holds 4 warehouses (about 300 MB).
server_settings=(-c listen_addresses=127.0.0.1 -c max_connections=100
    -c synchronous_commit=off -c shared_buffers=1GB -c max_wal_size=4GB)
server_start "${server_settings[@]}"

url="host=127.0.0.1 port=$port user=postgres dbname=postgres"
sql() { "$psql" "$url" -X -q -A -t -v ON_ERROR_STOP=1 -c "$1"; }

# --- measuring ------------------------------------------------------------------
# div A B [SCALE [FORMAT]]: A * SCALE / B.
div() { awk -v a="$1" -v b="$2" -v s="${3:-1}" -v f="${4:-%.2f}" 'BEGIN { if (b > 0) printf f, a * s / b; else print "n/a" }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
say() { echo ">> $*" >&2; }
# rows_of TABLE...: rows in the tables, together.
rows_of() {
    local q="select 0" t
    for t in "$@"; do q="$q + (select count(*) from $t)"; done
    sql "$q"
}
# dump DIR TABLE...: each table to DIR/TABLE.csv; echoes the bytes written.
dump() {
    local dir=$1 t; shift
    rm -f "$dir"/*.csv
    for t in "$@"; do
        "$psql" "$url" -X -q -v ON_ERROR_STOP=1 -c "\\copy $t to '$dir/$t.csv' with (format csv)"
    done
    cat "$dir"/*.csv | wc -c
}
# psql_copy NAME DIR TABLE...: empties the tables and loads them back from
# DIR/TABLE.csv with one psql, one \copy after another; sets WALL and CPU.
psql_copy() {
    local name=$1 dir=$2 t list; shift 2
    list=$(echo "$@" | tr ' ' ',')
    sql "truncate table $list; checkpoint" >/dev/null
    : >"$work/$name.sql"
    for t in "$@"; do echo "\\copy $t from '$dir/$t.csv' with (format csv)" >>"$work/$name.sql"; done
    run "$name" "$psql" "$url" -X -q -v ON_ERROR_STOP=1 -f "$work/$name.sql"
}

load_rows=()
run_rows=()
# mbs ROWS/S ROWS MB: MB/s at ROWS/S for ROWS rows of MB megabytes.
mbs() { awk -v r="$1" -v n="$2" -v m="$3" 'BEGIN { if (n > 0) printf "%.1f", r * m / n; else print "n/a" }'; }
# load_row LABEL ROWS MB CONN ROWS/S-LIST CPU-LIST: one line of the load
# table, medians of the runs.
load_row() {
    local label=$1 rows=$2 mb=$3 conn=$4 r c
    read -r -a r <<<"$5"
    read -r -a c <<<"$6"
    local m
    m=$(median "${r[@]}")
    load_rows+=("| $label | $rows | $mb | $conn | $m | $(mbs "$m" "$rows" "$mb") | $(div "$(median "${c[@]}")" "$rows" 1e6) | ${r[*]} |")
}

# --- load -------------------------------------------------------------------------
mkdir -p "$work/csv/tpcc" "$work/csv/mem"
for w in $load_ws; do
    ty1=() ty4=() tc1=() tc4=() pr=() pc=() cm1=() cm4=() cc1=() cc4=() cr=() ccp=()
    rows=""; mb=""; cmb=""
    for i in $(seq 1 "$reps"); do
        say "tpcc-load $w warehouse(s), -t 1 ($i/$reps)"
        sql "checkpoint" >/dev/null
        run "tload-$w-1-$i" "$ysql" -u "$url" --seed "$seed" --no-server-stats -o tpcc-load --warehouses "$w" -t 1
        ty1+=("$(field "$work/tload-$w-1-$i.out" "rows/s")"); tc1+=("$CPU")
        rows=$(field "$work/tload-$w-1-$i.out" "total rows")
        [ "$rows" = "$(rows_of $tables)" ] ||
            { echo "error: tpcc-load says $rows rows, the tables hold $(rows_of $tables)" >&2; exit 1; }
        if [ "$i" = 1 ]; then
            mb=$(div "$(dump "$work/csv/tpcc" $tables)" 1048576 1 %.1f)
        fi
        say "psql \\copy of the same rows ($i/$reps)"
        psql_copy "tpsql-$w-$i" "$work/csv/tpcc" $tables
        [ "$rows" = "$(rows_of $tables)" ] || { echo "error: psql \\copy loaded $(rows_of $tables) rows, not $rows" >&2; exit 1; }
        pr+=("$(div "$rows" "$WALL" 1 %.1f)"); pc+=("$CPU")
        say "tpcc-load $w warehouse(s), -t $load_threads ($i/$reps)"
        sql "checkpoint" >/dev/null
        run "tload-$w-4-$i" "$ysql" -u "$url" --seed "$seed" --no-server-stats -o tpcc-load --warehouses "$w" -t "$load_threads"
        ty4+=("$(field "$work/tload-$w-4-$i.out" "rows/s")"); tc4+=("$CPU")
        say "copy-mem $rows rows, -t 1 and -t $load_threads ($i/$reps)"
        sql "checkpoint" >/dev/null
        run "cmem-$w-1-$i" "$ysql" -u "$url" --seed "$seed" --no-server-stats --drop -o copy-mem -r "$rows" -t 1 -b 10000
        cm1+=("$(field "$work/cmem-$w-1-$i.out" "rows/s")"); cc1+=("$CPU")
        if [ "$i" = 1 ]; then
            cmb=$(div "$(dump "$work/csv/mem" test_table)" 1048576 1 %.1f)
        fi
        sql "checkpoint" >/dev/null
        run "cmem-$w-4-$i" "$ysql" -u "$url" --seed "$seed" --no-server-stats -o copy-mem -r "$rows" -t "$load_threads" -b 10000
        cm4+=("$(field "$work/cmem-$w-4-$i.out" "rows/s")"); cc4+=("$CPU")
        say "psql \\copy of copy-mem's rows ($i/$reps)"
        psql_copy "cpsql-$w-$i" "$work/csv/mem" test_table
        cr+=("$(div "$rows" "$WALL" 1 %.1f)"); ccp+=("$CPU")
    done
    load_row "tpcc-load, $w warehouse(s)" "$rows" "$mb" 1 "${ty1[*]}" "${tc1[*]}"
    load_row "tpcc-load, $w warehouse(s)" "$rows" "$mb" "$load_threads" "${ty4[*]}" "${tc4[*]}"
    load_row "psql \\copy of the same TPC-C rows (CSV, whole process)" "$rows" "$mb" 1 "${pr[*]}" "${pc[*]}"
    load_row "copy-mem, as many rows of test_table" "$rows" "$cmb" 1 "${cm1[*]}" "${cc1[*]}"
    load_row "copy-mem, as many rows of test_table" "$rows" "$cmb" "$load_threads" "${cm4[*]}" "${cc4[*]}"
    load_row "psql \\copy of copy-mem's rows (CSV, whole process)" "$rows" "$cmb" 1 "${cr[*]}" "${ccp[*]}"
    load_rows+=("| ratio tpcc-load / psql \\copy, same rows, 1 connection | | | | $(ratio "$(median "${ty1[@]}")" "$(median "${pr[@]}")") | | | |")
    load_rows+=("| ratio tpcc-load / copy-mem, as many rows, 1 connection | | | | $(ratio "$(median "${ty1[@]}")" "$(median "${cm1[@]}")") | | | |")
    rm -f "$work"/csv/tpcc/*.csv "$work"/csv/mem/*.csv
done
sql "drop table if exists test_table" >/dev/null

# --- tpmC -------------------------------------------------------------------------
commits() { sql "select xact_commit from pg_stat_database where datname = current_database()"; }
for w in $run_ws; do
    say "tpcc-load $w warehouse(s) for the runs"
    run "rload-$w" "$ysql" -u "$url" --seed "$seed" --no-server-stats -o tpcc-load --warehouses "$w" -t "$load_threads"
    sql "vacuum analyze" >/dev/null
    tp=() tt=() cpn=() cpt=() tps=()
    for i in $(seq 1 "$reps"); do
        say "tpcc $w warehouse(s), -t $terminals, ${secs} s ($i/$reps)"
        o0=$(sql "select count(*) from orders"); c0=$(commits)
        run "tpcc-$w-$i" "$ysql" -u "$url" --seed "$((seed + i))" --no-server-stats -o tpcc \
            --warehouses "$w" -t "$terminals" --time "${secs}s"
        o1=$(sql "select count(*) from orders"); c1=$(commits)
        no=$((o1 - o0)); tx=$((c1 - c0))
        [ "$no" -gt 0 ] || { echo "error: tpcc added no order in $w warehouse(s)" >&2; exit 1; }
        tp+=("$(div "$no" "$secs" 60 %.0f)")
        tt+=("$(field "$work/tpcc-$w-$i.out" "tpmC" | awk '{ printf "%.0f", $1 }')")
        tps+=("$(div "$tx" "$secs" 1 %.0f)")
        cpn+=("$(div "$CPU" "$no" 1e6 %.0f)")
        cpt+=("$(div "$CPU" "$tx" 1e6 %.0f)")
    done
    say "tpcc-check after the runs on $w warehouse(s)"
    run "check-$w" "$ysql" -u "$url" --no-server-stats -o tpcc-check
    run_rows+=("| $w | $terminals | $(median "${tp[@]}") | $(median "${tt[@]}") | $(median "${tps[@]}") | $(median "${cpn[@]}") | $(median "${cpt[@]}") | ${tp[*]}; ${cpn[*]} |")
done

# --- the specification's waits ---------------------------------------------------
# server_cpu: CPU seconds the server used so far: the postmaster with the
# processes it reaped, and its live processes.
server_cpu() {
    local pm
    pm=$(postmaster_pid)
    for f in /proc/[0-9]*/stat; do cat "$f" 2>/dev/null || true; done |
        awk -v pm="$pm" -v hz="$(getconf CLK_TCK)" '{
            pid = $1; sub(/^[0-9]+ \(.*\) /, ""); ppid = $2
            if (pid == pm) t += $12 + $13 + $14 + $15; else if (ppid == pm) t += $12 + $13
        } END { printf "%.2f", t / hz }'
}
# backends: the run's worker connections now (its server-statistics
# connections end in -stats).
backends() {
    sql "select count(*) from pg_stat_activity where backend_type = 'client backend' and application_name like 'ysql-bench-%' and application_name not like '%-stats'"
}
waits_rows=()
# waits_run W SECONDS WARMUP-SECONDS SCALE: one run with keying and think
# times (× SCALE) on W warehouses; appends its row to waits_rows.
waits_run() {
    local w=$1 secs=$2 warm=$3 scale=$4 s0 s1 n0 n1 most=0 sampler summary
    say "tpcc with keying and think times: $w warehouse(s), $((10 * w)) terminals over $connections connections, ${warm} s warmup, ${secs} s measured"
    n0=$(sql "select sum(d_next_o_id) from district")
    ( while :; do backends || true; sleep 5; done ) >"$work/backends" 2>/dev/null &
    sampler=$!
    s0=$(server_cpu)
    run "waits-$w" "$ysql" -u "$url" --seed "$seed" --no-server-stats -o tpcc --warehouses "$w" \
        -t "$connections" --tpcc-wait --tpcc-wait-scale "$scale" --warmup "${warm}s" --time "${secs}s" \
        --check-sample 10 --json "$work/waits-$w.json"
    s1=$(server_cpu)
    kill "$sampler" 2>/dev/null || true
    wait "$sampler" 2>/dev/null || true
    n1=$(sql "select sum(d_next_o_id) from district")
    for b in $(cat "$work/backends"); do [ "$b" -gt "$most" ] && most=$b; done
    summary="$work/waits-$w.out"
    grep -q "BROKEN" "$summary" && { echo "error: a consistency condition broke:" >&2; grep BROKEN "$summary" >&2; exit 1; }
    local tpmc eff nopm qavg qmax p90 srv cli
    tpmc=$(field "$summary" "tpmC"); eff=$(field "$summary" "efficiency"); nopm=$(field "$summary" "NOPM")
    qavg=$(awk -F': *' '$1 ~ /^queueing *$/ { print $2; exit }' "$summary" | sed 's/ (.*//')
    p90=$(awk -F': *' '$1 ~ /^\[new-order\] latency *$/ { print $2; exit }' "$summary" | sed 's/.*p90 \([^,]*\),.*/\1/')
    srv=$(awk -v a="$s0" -v b="$s1" -v t="$WALL" 'BEGIN { printf "%.1f s, %.1f%% of one core", b - a, 100 * (b - a) / t }')
    cli=$(awk -v c="$CPU" -v t="$WALL" 'BEGIN { printf "%.1f s, %.1f%% of one core", c, 100 * c / t }')
    waits_rows+=("| $w | $((10 * w)) | $connections ($most at once) | ${secs} s + ${warm} s warmup$([ "$scale" = 1 ] || echo ", waits × $scale") | $tpmc | $eff | $nopm | $((n1 - n0)) (warmup included) | $qavg | $p90 | $srv | $cli | $(div "$RSS_KB" 1024 1 %.0f) MB |")
}
if [ -n "$waits" ]; then
    say "tpcc-load $waits warehouse(s), -t $load_threads"
    run "wload-$waits" "$ysql" -u "$url" --seed "$seed" --no-server-stats -o tpcc-load --warehouses "$waits" -t "$load_threads"
    load_wall=$WALL
    sql "vacuum analyze" >/dev/null
    sql "checkpoint" >/dev/null
    waits_run "$waits" $((minutes * 60)) 60 1
elif [ "$quick" = 1 ]; then
    waits_run 1 5 1 0.05
fi

# 10,000 idle terminals: the client's peak RSS against 10 terminals.
idle_rss() {
    run "idle-$1" "$ysql" -u "$url" --no-server-stats --quiet -o tpcc --warehouses 1 --terminals "$1" -t 2 \
        --tpcc-wait --tpcc-wait-scale 10 --time 3s --check-sample 1
    echo "$RSS_KB"
}
rss10=$(idle_rss 10)
rss10k=$(idle_rss 10000)
extra=$((rss10k - rss10))
verdict="met"
{ [ "$extra" -le 8192 ] && [ "$rss10k" -le 65536 ]; } || verdict="MISSED"

# --- report -------------------------------------------------------------------------------------
server_version=$(sql "show server_version")
load_after=$(cut -d" " -f1-3 /proc/loadavg)
mode=full; [ "$quick" = 1 ] && mode="quick (sizes too small for the figures to mean anything)"; [ -z "$waits" ] || mode="the specification's keying and think times on $waits warehouses"
{
    echo "### TPC-C: $(date -u '+%Y-%m-%d %H:%M UTC'), $mode"
    echo
    echo "- machine: $cores cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), load average before the run: $load_before, after: $load_after"
    echo "- server: PostgreSQL $server_version on 127.0.0.1 (TCP), ${server_settings[*]}"
    echo "- client: ysql-bench $("$ysql" --version | awk '{ print $2 }') ($build, commit $(cd "$repo" && git describe --always --dirty 2>/dev/null || echo '?'), --no-server-stats), $("$psql" --version)"
    [ -n "$waits" ] || echo "- $reps repetition(s); medians shown, every run listed; MB are the rows as CSV text; client CPU is GNU time's user+system of the client process"
    if [ ${#load_rows[@]} -gt 0 ]; then
        echo
        echo "| load | rows | MB (CSV) | conn | rows/s | MB/s | client CPU µs/row | runs (rows/s) |"
        echo "|---|---|---|---|---|---|---|---|"
        printf '%s\n' "${load_rows[@]}"
    fi
    if [ ${#run_rows[@]} -gt 0 ]; then
        echo
        echo "tpcc, standard mix, no keying or think times, ${secs} s per run; New-Orders counted on the server (orders rows added), transactions as the server's commits:"
        echo
        echo "| warehouses | terminals | tpmC (server) | tpmC (tool) | transactions/s | client CPU µs/New-Order | client CPU µs/transaction | runs (tpmC; µs/New-Order) |"
        echo "|---|---|---|---|---|---|---|---|"
        printf '%s\n' "${run_rows[@]}"
    fi
    if [ ${#waits_rows[@]} -gt 0 ]; then
        echo
        [ -z "$waits" ] || echo "tpcc-load of $waits warehouses (-t $load_threads, its ANALYZE included): $(printf '%.0f' "$load_wall") s."
        echo "tpcc with keying and think times (--tpcc-wait), 10 terminals per warehouse over the connections, standard mix, --check-sample 10 after it (every condition held); New-Orders on the server: the rise of sum(d_next_o_id); queueing: the terminals' wait for a free connection; server CPU: the postmaster and its processes over the client's whole process (warmup and check included); client CPU: GNU time's user+system over the same:"
        echo
        echo "| warehouses | terminals | connections | measured | tpmC | efficiency | NOPM | New-Orders (server) | queueing | new-order p90 | server CPU | client CPU | client peak RSS |"
        echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        printf '%s\n' "${waits_rows[@]}"
    fi
    echo
    echo "Idle terminals: the client's peak RSS with 10 terminals $(div "$rss10" 1024 1 %.1f) MB, with 10,000 $(div "$rss10k" 1024 1 %.1f) MB: $(div "$extra" 10000 1024 %.0f) bytes per terminal; target (10,000 add at most 8 MB, the client within 64 MB): $verdict."
} >"$work/report.md"
cat "$work/report.md"
if [ -n "$record" ]; then
    { echo; cat "$work/report.md"; } >>"$record"
    say "appended to $record"
fi
