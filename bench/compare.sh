#!/usr/bin/env bash
# Side-by-side benchmark of ysql-bench against pgbench and psql (issues 7,
# 11, 16 and 24).
#
# Starts one throwaway PostgreSQL server that both tools share, loads the
# tables, and runs each pair alternately so that drift in the machine's load
# hits both sides alike. Prints the medians and the ratios ysql-bench / peer
# as Markdown that can be recorded in bench/RESULTS.md, and draws the
# connection sweep as a PNG.
#
# The sweep (issue 24) runs every point of workloads x sslmodes x
# connections: select and update by key (ysql-bench -o select/update against
# a pgbench script on the same test_table), pgbench's built-in select-only
# and tpcb-like (ysql-bench --builtin, on tables made by pgbench -i),
# pipelined select by key (ysql-bench --pipeline D --pipeline-sync D, D
# queries and one Sync, against a pgbench script of D selects between
# \startpipeline and \endpipeline; queries, not transactions, are its unit;
# pipeline-each gives ysql-bench a Sync per query instead, each query its
# own transaction, against the same script), each over plain TCP (sslmode=disable) and TLS
# (sslmode=require: the server gets ssl=on and a throwaway self-signed
# certificate, RSA 2048, made with the openssl command). Each point runs
# --pairs pairs; the first tool of a pair alternates (ysql-bench first in
# odd pairs, pgbench in even ones). Per point it reports the median and the
# range (min-max) of the per-pair ratios ysql-bench / pgbench of client CPU
# per unit and of units/s, and the medians of CPU and user CPU per unit, of
# units/s and of peak RSS for each tool.
#
# Units are counted on the server, never taken from the tools' reports:
# index scans of test_table (select, update, pipeline: one per query) and of
# pgbench_accounts (select-only: one per transaction), rows inserted into
# pgbench_history (tpcb-like: one per transaction); statistics are read
# before and after each run, once they have settled. ysql-bench runs without
# its server-statistics sampler (--no-server-stats): an extra connection
# polling pg_stat_activity is work pgbench does not do. Client CPU is the
# user+system time of the whole client process (GNU time) over those
# counts, user CPU the user time alone; peak RSS is GNU time's %M. pgbench
# runs as it is meant to: `-n -M prepared -j <cores>` (never more threads
# than clients), the database in a connection string (pgbench's -d is
# --debug), and every run is checked for debug output, for the -j and the
# query mode it reports and for failed transactions; a ysql-bench run with
# a `failed` line, a run that exits non-zero, or a point that counted no
# unit stops the script with an error. Units/s are over the seconds each
# tool queried: pgbench's -T includes its connecting, ysql-bench's --time
# does not, so pgbench's -T is lengthened by its connecting time (seconds
# at a thousand connections) and both query for about --secs. The other
# sections run over plain TCP (PGSSLMODE=disable).
#
#   bench/compare.sh                 full run (release build): the sweep
#                                    alone (--only sweep: 60 points x 3
#                                    pairs x 2 runs of 10 s, plus connecting
#                                    and settling) takes about 90 minutes on
#                                    2 cores, the other sections about 20
#   bench/compare.sh --quick         tiny sizes, 1 s runs, one pair, the sweep
#                                    at 4 connections, TLS on select alone
#                                    (about a minute): proves the script
#                                    works, asserts nothing about speed
#   options: --pairs N           pairs of runs per point, alternated (3);
#                                also --reps
#            --secs S            seconds per timed run (10)
#            --conns "1 4 16"    the sweep's connection counts (1 4 16 64 256 1024)
#            --workloads LIST    the sweep's workloads, comma-separated:
#                                select, update, select-only, tpcb-like,
#                                pipeline (all of these), pipeline-each;
#                                the pipeline points are skipped, with a
#                                note, when ysql-bench has no --pipeline,
#                                and pipeline runs as pipeline-each when
#                                it has no --pipeline-sync
#            --sslmodes LIST     disable, require (both)
#            --pipeline D        queries per pipeline (8)
#            --scale N           pgbench -i's scale for the built-in
#                                scripts (10; --quick 1)
#            --runs FILE         write every run of the sweep to FILE (TSV)
#            --only LIST         sections, comma-separated: sweep, connect,
#                                ycsb, sysbench, memory, copy, csv (all)
#            --record FILE       append the results to FILE
#            --png FILE          the sweep's picture (bench/sweep.png; with
#                                --quick, a temporary file)
#            --bin-dir DIR       use the binaries in DIR, build nothing
#            --profile           at each sweep point, before its pairs, one
#                                more run of each tool under `perf stat`
#                                (software events and tracepoints, which
#                                work where a VM has no hardware counters):
#                                per unit counted on the server, system
#                                calls by kind, context switches, the
#                                wake-ups done in the client's own context
#                                and the IPIs it sent (a wake-up of a task
#                                on the other core shows as an IPI).
#                                Not in the table of ratios: tracepoints
#                                cost each system call a little, and the
#                                tools make different numbers of them
#            --callgrind         at each sweep point, before its pairs, each tool
#                                under valgrind's callgrind with the caches
#                                simulated (I1 and D1 32 KB 8-way, LL 1 MB
#                                16-way, 64-byte lines), twice (about 2,000
#                                and 6,000 units; --quick 200 and 600): the difference over the
#                                units between gives instructions and misses
#                                per unit without the start and the end.
#                                Counts, not seconds: a busy machine moves
#                                them only through the tools' time-driven
#                                work (ysql-bench's once-a-second figures),
#                                which valgrind's slowness spreads over
#                                fewer units; compare within one run
#            --pairs 0           with --only sweep and --profile or
#                                --callgrind: the profiles alone
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# median, the throwaway server (find_pg_bin, server_init, server_start), run, field
. "$here/lib.sh"
repo=$(cd "$here/.." && pwd)

quick=0
reps=""
secs=""
conns=""
workloads="select,update,select-only,tpcb-like,pipeline"
sslmodes="disable,require"
sslmodes_given=0
depth=8
scale=""
runs_file=""
only="sweep,connect,ycsb,sysbench,memory,copy,csv"
record=""
png=""
bin_dir=""
perf_profile=0
callgrind=0
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1 ;;
        --reps|--pairs) reps=${2:?$1 needs a number}; shift ;;
        --secs) secs=${2:?--secs needs a number}; shift ;;
        --conns) conns=${2:?--conns needs a list}; shift ;;
        --workloads) workloads=${2:?--workloads needs a list}; shift ;;
        --sslmodes) sslmodes=${2:?--sslmodes needs a list}; sslmodes_given=1; shift ;;
        --pipeline) depth=${2:?--pipeline needs a number}; shift ;;
        --scale) scale=${2:?--scale needs a number}; shift ;;
        --runs) runs_file=${2:?--runs needs a file}; shift ;;
        --only) only=${2:?--only needs a list}; shift ;;
        --record) record=${2:?--record needs a file}; shift ;;
        --png) png=${2:?--png needs a file}; shift ;;
        --bin-dir) bin_dir=${2:?--bin-dir needs a directory}; shift ;;
        --profile) perf_profile=1 ;;
        --callgrind) callgrind=1 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "error: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

if [ "$quick" = 1 ]; then
    rows=20000; secs=${secs:-1}; conns=${conns:-4}; reps=${reps:-1}; scale=${scale:-1}
    ycsb_records=2000; mem_conns=64; rss_secs=2; big_rows=200000; sb_rows=2000
    copy_batch=1000; csv_small=20000; csv_big=100000; profile=debug
else
    rows=1000000; secs=${secs:-10}; conns=${conns:-"1 4 16 64 256 1024"}; reps=${reps:-3}; scale=${scale:-10}
    ycsb_records=100000; mem_conns=1000; rss_secs=60; big_rows=10000000; sb_rows=100000
    copy_batch=10000; csv_small=1000000; csv_big=10000000; profile=release
fi
num_ok() { case "$1" in ''|*[!0-9]*|0) return 1 ;; esac; }
if [ "$reps" = 0 ] && [ $((perf_profile + callgrind)) -gt 0 ]; then
    # The profiles alone: the other sections have nothing to run 0 times.
    [ "$only" = sweep ] || { echo "error: --pairs 0 runs the sweep's profiles alone: add --only sweep" >&2; exit 2; }
else
    num_ok "$reps" || { echo "error: --pairs must be a whole number of at least 1 (0 only with --only sweep and --profile or --callgrind)" >&2; exit 2; }
fi
num_ok "$secs" || { echo "error: --secs must be a whole number of at least 1" >&2; exit 2; }
num_ok "$depth" || { echo "error: --pipeline must be a whole number of at least 1" >&2; exit 2; }
num_ok "$scale" || { echo "error: --scale must be a whole number of at least 1" >&2; exit 2; }
for w in ${workloads//,/ }; do
    case "$w" in select|update|select-only|tpcb-like|pipeline|pipeline-each) ;; *) echo "error: --workloads: no workload '$w'" >&2; exit 2 ;; esac
done
for m in ${sslmodes//,/ }; do
    case "$m" in disable|require) ;; *) echo "error: --sslmodes: '$m' is neither disable nor require" >&2; exit 2 ;; esac
done
[ -n "${workloads//,/}" ] && [ -n "${sslmodes//,/}" ] || { echo "error: --workloads and --sslmodes need at least one item" >&2; exit 2; }
for c in $conns; do num_ok "$c" || { echo "error: --conns takes whole numbers of at least 1, not '$c'" >&2; exit 2; }; done
has() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
for s in ${only//,/ }; do
    case "$s" in sweep|connect|ycsb|sysbench|memory|copy|csv) ;; *) echo "error: --only: no section '$s'" >&2; exit 2 ;; esac
done
clients=4
cores=$(nproc)
seed=42
load_before=$(cut -d" " -f1-3 /proc/loadavg)

# Enough descriptors for the largest sweep point (each tool holds one socket
# per connection).
max_conns=$mem_conns
for c in $conns; do [ "$c" -gt "$max_conns" ] && max_conns=$c; done
ulimit -n $((max_conns + 256)) 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
[ "$(ulimit -n)" -ge $((max_conns + 64)) ] ||
    { echo "error: $max_conns connections need an open-file limit of $((max_conns + 64)); it is $(ulimit -n)" >&2; exit 1; }

# --- tools -------------------------------------------------------------------
[ -x /usr/bin/time ] || { echo "error: /usr/bin/time (GNU time) not found: install the 'time' package (scripts/install-deps.sh)" >&2; exit 1; }
# --profile's events: what the kernel does for a client, per unit. Software
# events and tracepoints need no hardware counters (a VM often has none).
perf_events=task-clock,context-switches,cpu-migrations,page-faults,raw_syscalls:sys_enter,syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom,syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_ppoll,syscalls:sys_enter_poll,syscalls:sys_enter_futex,sched:sched_wakeup,ipi:ipi_send_cpu
if [ "$perf_profile" = 1 ]; then
    command -v perf >/dev/null 2>&1 ||
        { echo "error: --profile needs perf (Debian's linux-perf)" >&2; exit 1; }
    perf stat -x, -e "$perf_events" -o /dev/null true 2>/dev/null ||
        { echo "error: --profile: perf cannot count these events here ($perf_events); run as root or lower kernel.perf_event_paranoid" >&2; exit 1; }
fi
if [ "$callgrind" = 1 ]; then
    command -v valgrind >/dev/null 2>&1 ||
        { echo "error: --callgrind needs valgrind (Debian's valgrind)" >&2; exit 1; }
fi
find_pg_bin
pgbench=$(tool pgbench)
psql=$(tool psql)
[ -n "$pgbench" ] && [ -n "$psql" ] ||
    { echo "error: pgbench and psql are needed (scripts/install-deps.sh installs them)" >&2; exit 1; }

build="$profile build"
plot=""
# The commit of the binaries measured: what the repository holds when this
# script builds them; with --bin-dir, what they say they were built from
# (build.rs's commit, which does not mark uncommitted changes).
commit=$(cd "$repo" && git describe --always --dirty 2>/dev/null || echo '?')
if [ -n "$bin_dir" ]; then
    build="binaries from $bin_dir"
    [ -x "$bin_dir/examples/sweep_plot" ] && plot=$bin_dir/examples/sweep_plot
else
    flags=(--locked --bins --example sweep_plot)
    [ "$profile" = release ] && flags+=(--release)
    (cd "$repo" && cargo build "${flags[@]}" >&2)
    bin_dir=$(cd "$repo" && cargo metadata --format-version 1 --no-deps 2>/dev/null |
        sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')/$profile
    plot=$bin_dir/examples/sweep_plot
fi
ysql=$bin_dir/ysql-bench
csvgen=$bin_dir/csv_generator
[ -x "$ysql" ] && [ -x "$csvgen" ] || { echo "error: no ysql-bench/csv_generator in $bin_dir" >&2; exit 1; }
[ "$build" = "$profile build" ] ||
    commit="$("$ysql" --version | sed -n 's/.*(\(.*\)).*/\1/p') by their --version"

# --- the server ----------------------------------------------------------------
work=$(mktemp -d /tmp/ysql-bench-compare.XXXXXX)
trap server_cleanup EXIT
trap 'exit 130' INT TERM
server_init
mkdir -p "$work/csv"
# Durable by default (fsync on), but commits do not wait for the WAL flush:
# otherwise the update pairs measure the disk's fsync latency, the same for
# both tools, instead of the clients. shared_buffers holds the tables;
# max_connections has room for the largest sweep point and the counting.
server_settings=(-c listen_addresses=127.0.0.1 -c max_connections=$((max_conns + 20))
    -c synchronous_commit=off -c shared_buffers=1GB -c max_wal_size=4GB)
# The sweep's TLS points: ssl=on with a throwaway self-signed certificate
# (RSA 2048, as PostgreSQL's documentation makes one), in the data
# directory under the names the server looks for by default.
if has sweep && [[ ",$sslmodes," == *,require,* ]]; then
    command -v openssl >/dev/null 2>&1 ||
        { echo "error: the TLS points need the openssl command (or --sslmodes disable)" >&2; exit 1; }
    openssl req -new -x509 -days 2 -nodes -newkey rsa:2048 -subj /CN=127.0.0.1 \
        -keyout "$work/data/server.key" -out "$work/data/server.crt" >"$work/openssl.log" 2>&1 ||
        { cat "$work/openssl.log" >&2; echo "error: openssl could not make the server's certificate" >&2; exit 1; }
    chmod 600 "$work/data/server.key"
    [ ${#as_server[@]} -eq 0 ] || chown postgres: "$work/data/server.key" "$work/data/server.crt"
    server_settings+=(-c ssl=on)
fi
server_start "${server_settings[@]}"

# Every client connects over plain TCP unless told otherwise: with ssl=on a
# libpq default of sslmode=prefer would put every other section (and
# sysbench, which takes no connection string) on TLS.
export PGSSLMODE=disable
url="host=127.0.0.1 port=$port user=postgres dbname=postgres sslmode=disable"
sql() { "$psql" "$url" -X -q -A -t -v ON_ERROR_STOP=1 -c "$1"; }

# --- measuring ------------------------------------------------------------------
# Queries counted on the server: index scans of the benchmark tables (each
# select, update and YCSB read by key is one; -C's connections each run
# one). Backends report them when they end or go idle (at most a second
# late), so the reading waits until two readings agree; reading them runs
# no scan of these tables, so it does not change them.
# scans [COLUMN TABLES]: the sum of a pg_stat_user_tables column (idx_scan)
# over the tables (test_table and usertable), TABLES as quoted SQL names.
scans() {
    sql "select coalesce(sum(${1:-idx_scan}), 0) from pg_stat_user_tables where relname in (${2:-'test_table', 'usertable'})"
}
counted() {
    local a b
    a=$(scans "$@")
    for _ in $(seq 1 50); do
        sleep 0.2
        b=$(scans "$@")
        [ "$a" = "$b" ] && break
        a=$b
    done
    echo "$a"
}
# run NAME cmd...: lib.sh's timed_run, and QUERIES counted on the server.
run() {
    local q0 q1
    q0=$(counted)
    timed_run "$@"
    q1=$(counted)
    QUERIES=$((q1 - q0))
}
# run_on COLUMN TABLES NAME cmd...: as run, counting COUNT as the change of
# COLUMN over TABLES (see scans).
run_on() {
    local column=$1 tables=$2 c0 c1
    shift 2
    c0=$(counted "$column" "$tables")
    timed_run "$@"
    c1=$(counted "$column" "$tables")
    COUNT=$((c1 - c0))
}
# check_pgbench NAME THREADS: pgbench ran as intended: no debug output, the
# -j it was given, prepared statements. A pgbench in debug mode (-d) logs
# every protocol message and costs several times the CPU.
check_pgbench() {
    local name=$1 j=$2
    if grep -Eq '^(pgbench: )?client [0-9]+ (sending|receiving|executing|preparing)' "$work/$name.err"; then
        echo "error: pgbench wrote debug output in $name (was it given -d?): the comparison would be meaningless" >&2
        exit 1
    fi
    grep -q "^number of threads: $j\$" "$work/$name.out" ||
        { echo "error: pgbench in $name did not run $j threads: $(grep '^number of threads' "$work/$name.out")" >&2; exit 1; }
    grep -q "^query mode: prepared\$" "$work/$name.out" ||
        { echo "error: pgbench in $name did not use prepared statements" >&2; exit 1; }
    if grep -q '^number of failed transactions: [1-9]' "$work/$name.out"; then
        echo "error: pgbench in $name: $(grep '^number of failed transactions' "$work/$name.out")" >&2
        exit 1
    fi
}
# pgbench_secs NAME: the seconds pgbench's clients ran queries. pgbench's -T
# clock starts before it opens its connections (it reports that part as
# "initial connection time"), ysql-bench's --time after its workers have
# connected: dividing both by --secs would charge pgbench for its connects,
# which at hundreds of connections take seconds of the run.
# With T, the run's -T was T rather than --secs.
pgbench_secs() {
    awk -v s="${2:-$secs}" '/^initial connection time = / { s -= $5 / 1000 } END { printf "%.3f", s }' "$work/$1.out"
}
# connect_secs NAME: pgbench's initial connection time in seconds.
connect_secs() {
    awk '/^initial connection time = / { printf "%.3f", $5 / 1000 }' "$work/$1.out"
}
# div A B [SCALE [FORMAT]]: A * SCALE / B.
div() { awk -v a="$1" -v b="$2" -v s="${3:-1}" -v f="${4:-%.2f}" 'BEGIN { if (b > 0) printf f, a * s / b; else print "n/a" }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
mb() { div "$1" 1024 1 %.1f; }

results=()
profile_rows=()
callgrind_rows=()
row() { results+=("| $1 | $2 | $3 | $4 | $5 |"); }
sweep_rows=()
say() { echo ">> $*" >&2; }

# --- the data ---------------------------------------------------------------------
say "server: 127.0.0.1:$port, loading $rows rows"
run load "$ysql" -u "$url" --seed "$seed" --drop -o copy-mem -r "$rows" -t 2 -b "$copy_batch"
sql "vacuum analyze test_table" >/dev/null

cat >"$work/select.sql" <<EOF
\\set id random(0, $((rows - 1)))
select f1, f2, f3, f4 from test_table where id = :id;
EOF
cat >"$work/update.sql" <<EOF
\\set id random(0, $((rows - 1)))
update test_table set f1 = :f1, f2 = :f2, f3 = :f3, f4 = :f4 where id = :id;
EOF
# pgbench cannot make random text per query, so it binds four fixed
# 24-character values; ysql-bench binds four new random ones per query. The
# statement, parameter count and row size are the same.
upd_vars=(-D f1=AbCdEfGhIjKlMnOpQrStUvWx -D f2=BcDeFgHiJkLmNoPqRsTuVwXy
    -D f3=CdEfGhIjKlMnOpQrStUvWxYz -D f4=DeFgHiJkLmNoPqRsTuVwXyZa)

# pgbench_threads N: -j as pgbench is best run, one thread per core, never
# more threads than clients (pgbench refuses that).
pgbench_threads() { if [ "$1" -lt "$cores" ]; then echo "$1"; else echo "$cores"; fi; }

# --- the sweep: workloads x sslmodes x connections --------------------------------------
# workload_args WORKLOAD: sets yargs (ysql-bench's arguments) and pargs
# (pgbench's) for WORKLOAD, and where the server counts its units: ucol, a
# pg_stat_user_tables column, over utab, tables as quoted SQL names.
workload_args() {
    case "$1" in
        select|update)
            yargs=(-o "$1" -r "$rows"); pargs=(-f "$work/$1.sql"); ucol=idx_scan; utab="'test_table'" ;;
        pipeline)
            yargs=(-o select -r "$rows" --pipeline "$depth" "${batch_sync[@]}"); pargs=(-f "$work/pipeline.sql"); ucol=idx_scan; utab="'test_table'" ;;
        pipeline-each)
            yargs=(-o select -r "$rows" --pipeline "$depth"); pargs=(-f "$work/pipeline.sql"); ucol=idx_scan; utab="'test_table'" ;;
        select-only)
            yargs=(--builtin select-only); pargs=(-b select-only); ucol=idx_scan; utab="'pgbench_accounts'" ;;
        tpcb-like)
            yargs=(--builtin tpcb-like); pargs=(-b tpcb-like); ucol=n_tup_ins; utab="'pgbench_history'" ;;
    esac
    [ "$1" = update ] && pargs+=("${upd_vars[@]}")
    return 0
}
workload_title() {
    case "$1" in
        select) echo "select by key" ;;
        update) echo "update by key" ;;
        pipeline) if [ ${#batch_sync[@]} -gt 0 ]; then echo "select by key, pipeline $depth, one Sync per $depth (queries)"; else echo "select by key, pipeline $depth, a Sync each (queries)"; fi ;;
        pipeline-each) echo "select by key, pipeline $depth, a Sync each (queries)" ;;
        *) echo "$1 (builtin)" ;;
    esac
}
# check_ysql NAME SSLMODE: the run failed no unit and was on the transport
# asked for (ysql-bench says on stderr how its connection is encrypted).
check_ysql() {
    if grep -q '^failed ' "$work/$1.out"; then
        echo "error: ysql-bench in $1: $(grep '^failed ' "$work/$1.out")" >&2; exit 1
    fi
    case "$2" in
        require) grep -q 'encryption: TLS' "$work/$1.err" ||
            { echo "error: ysql-bench in $1 did not report a TLS connection" >&2; exit 1; }
            [ -n "$tls_seen" ] || tls_seen=$(sed -n 's/.*encryption: //p' "$work/$1.err" | head -n 1) ;;
        disable) if grep -q 'encryption: TLS' "$work/$1.err"; then
            echo "error: ysql-bench in $1 connected over TLS with sslmode=disable" >&2; exit 1; fi ;;
    esac
}
# spread X...: "median (min–max)" of ratios.
spread() {
    local lo hi
    lo=$(printf '%s\n' "$@" | sort -g | head -n 1)
    hi=$(printf '%s\n' "$@" | sort -g | tail -n 1)
    awk -v m="$(median "$@")" -v a="$lo" -v b="$hi" 'BEGIN { printf "%.2f (%.2f–%.2f)", m, a, b }'
}

# sweep_point WORKLOAD SSLMODE CONNECTIONS: --pairs alternated pairs, one
# row of the table and two lines of the picture.
sweep_point() {
    local w=$1 mode=$2 c=$3 j u i tool name dur tps cpu usr rss tool_n tool_rate
    local yt=() yc=() yu=() ym=() pt=() pc=() pu=() pm=() rc=() rt=()
    local yargs pargs ucol utab
    workload_args "$w"
    j=$(pgbench_threads "$c")
    u="host=127.0.0.1 port=$port user=postgres dbname=postgres sslmode=$mode"
    # pgbench's -T counts its connecting, which takes seconds at a thousand
    # connections (more over TLS); ysql-bench's --time starts once it has
    # connected. So that both query for about --secs, and both amortize
    # their connecting over as many seconds of queries, pgbench's -T is
    # --secs plus its connecting time at this point, rounded: measured once
    # by a one-transaction run, then taken from its latest run.
    local key="$mode-$c" pg_t mode_title=plain
    [ "$mode" = require ] && mode_title=TLS
    if [ -z "${conn_secs[$key]:-}" ]; then
        say "sslmode=$mode, $c connections: pgbench's connecting time"
        "$pgbench" "$u" -n -M prepared -c "$c" -j "$j" -t 1 -f "$work/select.sql" >"$work/probe-$key.out" 2>&1 ||
            { tail -n 20 "$work/probe-$key.out" >&2; echo "error: pgbench could not connect $c times with sslmode=$mode" >&2; exit 1; }
        conn_secs[$key]=$(connect_secs "probe-$key")
    fi
    # Each tool's command at this point but for how long it runs (and
    # ysql-bench's seed): the pairs, profile_point and callgrind_point run
    # these.
    local ysql_at=("$ysql" -u "$u" -t "$c" --no-server-stats "${yargs[@]}")
    local pgbench_at=("$pgbench" "$u" -n -M prepared -c "$c" -j "$j" "${pargs[@]}")
    [ "$perf_profile" = 0 ] || profile_point
    [ "$callgrind" = 0 ] || callgrind_point
    [ "$reps" -gt 0 ] || return 0
    for i in $(seq 1 "$reps"); do
        local order="ysql-bench pgbench"
        [ $((i % 2)) = 0 ] && order="pgbench ysql-bench"
        for tool in $order; do
            name="$w-$mode-$c-$tool-$i"
            say "$w, sslmode=$mode, $c connections, pair $i/$reps: $tool"
            if [ "$tool" = ysql-bench ]; then
                run_on "$ucol" "$utab" "$name" "${ysql_at[@]}" --seed "$((seed + i))" --time "${secs}s"
                check_ysql "$name" "$mode"
                dur=$secs
                tool_n=$(field "$work/$name.out" "nr queries"); [ -n "$tool_n" ] || tool_n=$(field "$work/$name.out" "nr txns")
                tool_rate=$(field "$work/$name.out" "queries/s"); [ -n "$tool_rate" ] || tool_rate=$(field "$work/$name.out" "txns/s")
            else
                # Connecting a thousand times varies from run to run: a run
                # that queried less than 80% of --secs is done again with
                # the -T its own connecting asks for (at most twice).
                local try
                for try in 1 2 3; do
                    pg_t=$(pgbench_t "$key")
                    run_on "$ucol" "$utab" "$name" "${pgbench_at[@]}" -T "$pg_t"
                    check_pgbench "$name" "$j"
                    dur=$(pgbench_secs "$name" "$pg_t")
                    conn_secs[$key]=$(connect_secs "$name")
                    awk -v d="$dur" -v s="$secs" 'BEGIN { exit !(d < 0.8 * s) }' || break
                    [ "$try" = 3 ] || say "pgbench queried $dur s of -T $pg_t (connecting took ${conn_secs[$key]} s): again"
                done
                awk -v d="$dur" 'BEGIN { exit !(d > 0) }' ||
                    { echo "error: $name: pgbench spent all its -T $pg_t s connecting (${conn_secs[$key]} s)" >&2; exit 1; }
                tool_n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/$name.out")
                tool_rate=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/$name.out")
            fi
            [ "$COUNT" -gt 0 ] ||
                { echo "error: $name: the server counted no unit ($ucol of $utab did not grow)" >&2; exit 1; }
            tps=$(div "$COUNT" "$dur" 1 %.1f); cpu=$(div "$CPU" "$COUNT" 1e6 %.3f)
            usr=$(div "$UCPU" "$COUNT" 1e6 %.3f); rss=$(mb "$RSS_KB")
            if [ "$tool" = ysql-bench ]; then
                yt+=("$tps"); yc+=("$cpu"); yu+=("$usr"); ym+=("$rss")
            else
                pt+=("$tps"); pc+=("$cpu"); pu+=("$usr"); pm+=("$rss")
            fi
            [ -z "$runs_file" ] || printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$mode" "$c" "$i" \
                "$tool" "$dur" "$COUNT" "${tool_n:-?}" "${tool_rate:-?}" "$tps" "$cpu" "$usr" "$rss" "$CPU" >>"$runs_file"
        done
        rc+=("$(awk -v a="${yc[-1]}" -v b="${pc[-1]}" 'BEGIN { printf "%.4f", a / b }')")
        rt+=("$(awk -v a="${yt[-1]}" -v b="${pt[-1]}" 'BEGIN { printf "%.4f", a / b }')")
    done
    sweep_rows+=("| $(workload_title "$w") | $mode_title | $c | $reps | $(spread "${rc[@]}") | $(spread "${rt[@]}") | $(median "${yc[@]}") / $(median "${pc[@]}") | $(median "${yu[@]}") / $(median "${pu[@]}") | $(median "${yt[@]}") / $(median "${pt[@]}") | $(median "${ym[@]}") / $(median "${pm[@]}") |")
    printf '%s\tysql-bench\t%s\t%s\t%s\t%s\n' "$w $mode_title" "$c" "$(median "${yt[@]}")" "$(median "${yc[@]}")" "$(median "${ym[@]}")" >>"$work/sweep.tsv"
    printf '%s\tpgbench -j %s\t%s\t%s\t%s\t%s\n' "$w $mode_title" "$cores" "$c" "$(median "${pt[@]}")" "$(median "${pc[@]}")" "$(median "${pm[@]}")" >>"$work/sweep.tsv"
    if [ "$c" -ge 1000 ]; then
        local m
        for m in "${ym[@]}"; do awk -v m="$m" -v r="${y_rss_max[$mode]}" 'BEGIN { exit !(m > r) }' && y_rss_max[$mode]=$m; done
    fi
    return 0
}

# perf_value FILE EVENT: the count perf stat -x, wrote for EVENT (empty when
# it was not counted).
perf_value() { awk -F, -v e="$2" '$3 == e && $1 ~ /^[0-9.]+$/ { print $1; exit }' "$1"; }
# per_unit X N: X / N with three decimals, "–" without X.
per_unit() { if [ -n "$1" ]; then div "$1" "$2" 1 %.3f; else echo "–"; fi; }

# pgbench_t KEY: pgbench's -T at the point KEY (sslmode-connections): --secs
# and its connecting time there, rounded.
pgbench_t() { awk -v s="$secs" -v c="${conn_secs[$1]:-0}" 'BEGIN { printf "%d", s + int(c + 0.5) }'; }

# profile_point (--profile), called by sweep_point, whose point it profiles
# (w, c, mode_title, key, ucol, utab, ysql_at, pgbench_at): one run of each
# tool under perf stat, ysql-bench first; one row each in profile_rows, per
# unit counted on the server.
profile_point() {
    local tool name f n sends recvs rw waits
    for tool in ysql-bench pgbench; do
        name="profile-$w-$mode-$c-$tool"
        f=$work/$name.perf
        say "$w, sslmode=$mode, $c connections: $tool under perf stat"
        if [ "$tool" = ysql-bench ]; then
            run_on "$ucol" "$utab" "$name" perf stat -x, -o "$f" -e "$perf_events" \
                "${ysql_at[@]}" --seed "$seed" --time "${secs}s"
            check_ysql "$name" "$mode"
        else
            run_on "$ucol" "$utab" "$name" perf stat -x, -o "$f" -e "$perf_events" \
                "${pgbench_at[@]}" -T "$(pgbench_t "$key")"
            check_pgbench "$name" "$j"
        fi
        n=$COUNT
        [ "$n" -gt 0 ] || { echo "error: $name: the server counted no unit" >&2; exit 1; }
        sends=$(perf_value "$f" syscalls:sys_enter_sendto)
        recvs=$(perf_value "$f" syscalls:sys_enter_recvfrom)
        rw=$(awk -v a="$(perf_value "$f" syscalls:sys_enter_read)" -v b="$(perf_value "$f" syscalls:sys_enter_write)" 'BEGIN { print a + b }')
        waits=$(awk -v a="$(perf_value "$f" syscalls:sys_enter_epoll_wait)" -v b="$(perf_value "$f" syscalls:sys_enter_ppoll)" \
            -v d="$(perf_value "$f" syscalls:sys_enter_poll)" 'BEGIN { print a + b + d }')
        profile_rows+=("| $(workload_title "$w") | $mode_title | $c | $tool | $n | $(div "$CPU" "$n" 1e6 %.3f) | $(div "$UCPU" "$n" 1e6 %.3f) | $(per_unit "$(perf_value "$f" raw_syscalls:sys_enter)" "$n") | $(per_unit "$sends" "$n") | $(per_unit "$recvs" "$n") | $(per_unit "$rw" "$n") | $(per_unit "$waits" "$n") | $(per_unit "$(perf_value "$f" syscalls:sys_enter_futex)" "$n") | $(per_unit "$(perf_value "$f" context-switches)" "$n") | $(per_unit "$(perf_value "$f" sched:sched_wakeup)" "$n") | $(per_unit "$(perf_value "$f" ipi:ipi_send_cpu)" "$n") |")
    done
}

# callgrind_point (--callgrind), called by sweep_point as profile_point is:
# each tool under callgrind for n and 3n units per connection (about 2,000
# and 6,000 units in all); one row each in callgrind_rows: instructions and
# cache misses per unit over the units between, counted on the server.
callgrind_point() {
    local tool name k n1 n2 per ir i1 d1 ll
    local -a sums=() counts=()
    local base=2000; [ "$quick" = 1 ] && base=200
    n1=$(( (base + c - 1) / c )); n2=$((3 * n1))
    for tool in ysql-bench pgbench; do
        sums=(); counts=()
        for k in "$n1" "$n2"; do
            name="callgrind-$w-$mode-$c-$tool-$k"
            say "$w, sslmode=$mode, $c connections: $tool under callgrind, $k units a connection"
            local vg=(valgrind --tool=callgrind --cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=1048576,16,64
                --callgrind-out-file="$work/$name.cg")
            if [ "$tool" = ysql-bench ]; then
                run_on "$ucol" "$utab" "$name" "${vg[@]}" "${ysql_at[@]}" --seed "$seed" --transactions "$k"
                check_ysql "$name" "$mode"
            else
                run_on "$ucol" "$utab" "$name" "${vg[@]}" "${pgbench_at[@]}" -t "$k"
                check_pgbench "$name" "$j"
            fi
            # summary: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
            sums+=("$(awk '/^summary:/ { print $2, $5, $6 + $7, $8 + $9 + $10 }' "$work/$name.cg")")
            counts+=("$COUNT")
        done
        per=$((counts[1] - counts[0]))
        [ "$per" -gt 0 ] || { echo "error: callgrind at $w $mode $c: $tool's longer run counted no more units" >&2; exit 1; }
        read -r ir i1 d1 ll < <(awk -v a="${sums[0]}" -v b="${sums[1]}" -v n="$per" 'BEGIN {
            split(a, x, " "); split(b, y, " ");
            printf "%.0f %.1f %.1f %.1f\n", (y[1] - x[1]) / n, (y[2] - x[2]) / n, (y[3] - x[3]) / n, (y[4] - x[4]) / n }')
        callgrind_rows+=("| $(workload_title "$w") | $mode_title | $c | $tool | $per | $ir | $i1 | $d1 | $ll |")
    done
}

declare -A conn_secs=() y_rss_max=([disable]=0 [require]=0)
skipped=()
tls_seen=""
if has sweep; then
    ws=" ${workloads//,/ } "
    if [[ "$ws" == *" select-only "* || "$ws" == *" tpcb-like "* ]]; then
        # pgbench's own tables, as pgbench -i makes them; the builtin scripts
        # of both tools run on them.
        say "pgbench -i -s $scale"
        run pgbench-init "$pgbench" "$url" -i -q -s "$scale"
    fi
    if [[ "$ws" == *" pipeline"* ]] && ! "$ysql" --help | grep -q -- '--pipeline'; then
        say "ysql-bench has no --pipeline: the pipeline points are skipped"
        skipped+=("pipeline (ysql-bench $("$ysql" --version | awk '{ print $2 }') has no --pipeline)")
        ws=${ws/ pipeline / }
        ws=${ws/ pipeline-each / }
    fi
    # The pipeline point sends what pgbench's script sends, $depth queries
    # and one Sync, where ysql-bench can (--pipeline-sync).
    batch_sync=()
    if "$ysql" --help | grep -q -- '--pipeline-sync'; then
        batch_sync=(--pipeline-sync "$depth")
    elif [[ "$ws" == *" pipeline "* ]]; then
        say "ysql-bench has no --pipeline-sync: the pipeline point sends a Sync per query"
    fi
    # pgbench's pipeline: $depth selects of random ids sent before waiting,
    # one sync at the end (\endpipeline); -M prepared, as the other points.
    {
        for k in $(seq 1 "$depth"); do echo "\\set id$k random(0, $((rows - 1)))"; done
        echo '\startpipeline'
        for k in $(seq 1 "$depth"); do echo "select f1, f2, f3, f4 from test_table where id = :id$k;"; done
        echo '\endpipeline'
    } >"$work/pipeline.sql"
    [ -z "$runs_file" ] || printf 'workload\tsslmode\tconnections\tpair\ttool\tseconds\tserver_units\ttool_count\ttool_rate\tunits_per_s\tcpu_us_per_unit\tuser_us_per_unit\trss_mb\tcpu_s\n' >"$runs_file"
    printf 'op\ttool\tconnections\tunits_per_s\tcpu_us_per_unit\trss_mb\n' >"$work/sweep.tsv"
    for w in $ws; do
        for mode in ${sslmodes//,/ }; do
            # --quick proves the TLS path on select alone, to stay short.
            [ "$quick" = 1 ] && [ "$sslmodes_given" = 0 ] && [ "$mode" = require ] && [ "$w" != select ] && continue
            for c in $conns; do
                sweep_point "$w" "$mode" "$c"
            done
        done
    done
    if [ ${#sweep_rows[@]} -gt 0 ]; then
        if [ -z "$png" ]; then
            if [ "$quick" = 1 ]; then png=$work/sweep.png; else png=$repo/bench/sweep.png; fi
        fi
        if [ -n "$plot" ] && [ -x "$plot" ]; then
            "$plot" "$work/sweep.tsv" "$png" "ysql-bench and pgbench -M prepared -j $cores, $cores cores, server on the same machine" >&2
            [ -s "$png" ] || { echo "error: no picture in $png" >&2; exit 1; }
            say "sweep picture: $png"
        else
            say "no sweep_plot example in $bin_dir: no picture"
        fi
    fi
fi

# --- -C: a new connection per query -------------------------------------------------------
if has connect; then
    for c in 1 "$clients"; do
        j=$(pgbench_threads "$c")
        yr=() yc=() pr=() pc=()
        for i in $(seq 1 "$reps"); do
            say "-C, $c connections, $i/$reps: ysql-bench"
            run "conn-$c-y$i" "$ysql" -u "$url" --seed "$((seed + i))" -o select -C -t "$c" -r "$rows" --time "${secs}s" --no-server-stats
            yr+=("$(div "$QUERIES" "$secs" 1 %.0f)"); yc+=("$(div "$CPU" "$QUERIES" 1e6 %.1f)")
            say "-C, $c connections, $i/$reps: pgbench"
            run "conn-$c-p$i" "$pgbench" "$url" -n -C -M prepared -c "$c" -j "$j" -T "$secs" -f "$work/select.sql"
            check_pgbench "conn-$c-p$i" "$j"
            pr+=("$(div "$QUERIES" "$secs" 1 %.0f)"); pc+=("$(div "$CPU" "$QUERIES" 1e6 %.1f)")
        done
        a=$(median "${yr[@]}"); b=$(median "${pr[@]}")
        row "select -C, $c conn: connections/s" "$a" "$b (pgbench -C -j $j)" "$(ratio "$a" "$b")" "${yr[*]} / ${pr[*]}"
        a=$(median "${yc[@]}"); b=$(median "${pc[@]}")
        row "select -C, $c conn: client CPU µs/connection" "$a" "$b" "$(ratio "$a" "$b")" "${yc[*]} / ${pc[*]}"
    done
fi

# --- YCSB-C against a pgbench script on the same usertable ---------------------------------
if has ycsb; then
    say "ycsb-load: $ycsb_records records"
    run ycsb-load "$ysql" -u "$url" --seed "$seed" --drop -o ycsb-load -r "$ycsb_records" -t 2
    sql "vacuum analyze usertable" >/dev/null
    # YCSB's key is 'user' and the FNV-1a 64 hash of the record number, made
    # positive; pgbench's hash_fnv1a(n, 0) is the same hash, signed.
    cat >"$work/ycsb-c.sql" <<EOF
\\set n random(0, $((ycsb_records - 1)))
\\set h abs(hash_fnv1a(:n, 0))
select ycsb_key, field0, field1, field2, field3, field4, field5, field6, field7, field8, field9 from usertable where ycsb_key = 'user' || :h;
EOF
    # The keys the script builds are the loaded ones: a key it cannot find
    # fails the check (and its first record, its last and 200 at random).
    cat >"$work/ycsb-check.sql" <<EOF
\\set n random(0, $((ycsb_records - 1)))
\\set h abs(hash_fnv1a(:n, 0))
select count(*) as found from usertable where ycsb_key = 'user' || :h \\gset
\\if :found = 0
select 'no row for record ' || :n || ', key user' || :h || ': the script does not build ycsb-load keys'::text as missing, 1 / 0;
\\endif
EOF
    for n in 0 $((ycsb_records - 1)); do
        "$pgbench" "$url" -n -t 1 -c 1 -D n0="$n" -f <(sed "s/random(0, $((ycsb_records - 1)))/:n0/" "$work/ycsb-check.sql") \
            >"$work/ycsb-check-$n.out" 2>&1 ||
            { cat "$work/ycsb-check-$n.out" >&2; echo "error: pgbench's key of record $n is not in usertable" >&2; exit 1; }
    done
    "$pgbench" "$url" -n -t 200 -c 1 -f "$work/ycsb-check.sql" >"$work/ycsb-check.out" 2>&1 ||
        { tail -n 5 "$work/ycsb-check.out" >&2; echo "error: the pgbench YCSB script builds keys that ycsb-load did not write" >&2; exit 1; }
    j=$(pgbench_threads "$clients")
    sq=() sc=() yq=() yc=() pq=() pc=()
    for i in $(seq 1 "$reps"); do
        say "ycsb-c $i/$reps: ysql-bench select (the reference)"
        run "ysel-$i" "$ysql" -u "$url" --seed "$((seed + i))" -o select -t "$clients" -r "$rows" --time "${secs}s" --no-server-stats
        sq+=("$(div "$QUERIES" "$secs" 1 %.0f)"); sc+=("$(div "$CPU" "$QUERIES" 1e6)")
        say "ycsb-c $i/$reps: ysql-bench ycsb-c"
        run "ycsb-y$i" "$ysql" -u "$url" --seed "$((seed + i))" -o ycsb-c --key-distribution uniform --no-server-stats \
            -t "$clients" -r "$ycsb_records" --time "${secs}s"
        yq+=("$(div "$QUERIES" "$secs" 1 %.0f)"); yc+=("$(div "$CPU" "$QUERIES" 1e6)")
        say "ycsb-c $i/$reps: pgbench"
        run "ycsb-p$i" "$pgbench" "$url" -n -M prepared -c "$clients" -j "$j" -T "$secs" -f "$work/ycsb-c.sql"
        check_pgbench "ycsb-p$i" "$j"
        pq+=("$(div "$QUERIES" "$(pgbench_secs "ycsb-p$i")" 1 %.0f)"); pc+=("$(div "$CPU" "$QUERIES" 1e6)")
    done
    a=$(median "${yq[@]}"); b=$(median "${pq[@]}")
    row "ycsb-c (uniform, $ycsb_records records), $clients conn: queries/s" "$a" "$b (pgbench script -j $j)" "$(ratio "$a" "$b")" "${yq[*]} / ${pq[*]}"
    a=$(median "${yc[@]}"); b=$(median "${pc[@]}")
    row "ycsb-c: client CPU µs/query" "$a" "$b" "$(ratio "$a" "$b")" "${yc[*]} / ${pc[*]}"
    s=$(median "${sc[@]}")
    row "ycsb-c CPU/query over ysql-bench's own select (same runs)" "$(ratio "$a" "$s")" "–" "–" "select µs/query: ${sc[*]}; q/s ${sq[*]}"
fi

# --- sysbench OLTP on the tables of oltp-prepare ------------------------------------------------
# sysbench's oltp_read_write and oltp_point_select against ysql-bench's
# oltp-read-write and oltp-point-select, same tables, same threads, uniform
# ids on both (sysbench's --rand-type=uniform), alternated. Transactions are
# counted on the server: each is one commit (the server's xact_commit; the
# few commits of either tool's set-up are a fixed handful per run).
if has sysbench; then
    sysbench=$(command -v sysbench || true)
    if [ -z "$sysbench" ]; then
        say "no sysbench: the sysbench section is skipped (scripts/install-deps.sh installs it)"
    else
        say "oltp-prepare: 2 tables of $sb_rows rows"
        run oltp-prepare "$ysql" -u "$url" --seed "$seed" --drop -o oltp-prepare --tables 2 -r "$sb_rows" -t 2
        commits() { sql "select xact_commit from pg_stat_database where datname = current_database()"; }
        sb_args=(--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="$port" --pgsql-user=postgres
            --pgsql-db=postgres --tables=2 --table-size="$sb_rows" --threads="$clients" --time="$secs"
            --rand-type=uniform)
        for script in read-write point-select; do
            yt=() yc=() st=() sc=()
            for i in $(seq 1 "$reps"); do
                say "oltp $script $i/$reps: ysql-bench"
                c0=$(commits)
                run "oltp-y-$script-$i" "$ysql" -u "$url" --seed "$((seed + i))" -o "oltp-$script" --tables 2 \
                    -r "$sb_rows" -t "$clients" --time "${secs}s" --no-server-stats
                c1=$(commits)
                yt+=("$(div "$((c1 - c0))" "$secs" 1 %.0f)"); yc+=("$(div "$CPU" "$((c1 - c0))" 1e6)")
                say "oltp $script $i/$reps: sysbench"
                c0=$(commits)
                run "oltp-s-$script-$i" "$sysbench" "oltp_${script//-/_}" "${sb_args[@]}" run
                c1=$(commits)
                grep -q "Number of threads: $clients" "$work/oltp-s-$script-$i.out" ||
                    { echo "error: sysbench did not run $clients threads" >&2; exit 1; }
                st+=("$(div "$((c1 - c0))" "$secs" 1 %.0f)"); sc+=("$(div "$CPU" "$((c1 - c0))" 1e6)")
            done
            a=$(median "${yt[@]}"); b=$(median "${st[@]}")
            row "oltp-$script, 2×$sb_rows rows, $clients threads: transactions/s (server commits)" "$a" "$b (sysbench oltp_${script//-/_})" "$(ratio "$a" "$b")" "${yt[*]} / ${st[*]}"
            a=$(median "${yc[@]}"); b=$(median "${sc[@]}")
            row "oltp-$script: client CPU µs/transaction" "$a" "$b" "$(ratio "$a" "$b")" "${yc[*]} / ${sc[*]}"
        done
        run oltp-cleanup "$ysql" -u "$url" -o oltp-cleanup --tables 2
    fi
fi

# --- memory ------------------------------------------------------------------------------------
if has memory; then
    mkdir -p "$work/graph"
    say "peak RSS: select, $mem_conns connections, --graph and --json"
    run "mem-y" "$ysql" -u "$url" -o select -t "$mem_conns" -r "$rows" --time "${secs}s" \
        --graph --graph-dir "$work/graph" --json "$work/graph/run.json"
    y_mem=$RSS_KB
    say "peak RSS: select, 4 connections, --graph and --json"
    run "mem-y4" "$ysql" -u "$url" -o select -t "$clients" -r "$rows" --time "${secs}s" \
        --graph --graph-dir "$work/graph" --json "$work/graph/run4.json"
    y_mem4=$RSS_KB
    j=$(pgbench_threads "$mem_conns")
    say "peak RSS: pgbench, $mem_conns connections"
    run "mem-p" "$pgbench" "$url" -n -M prepared -c "$mem_conns" -j "$j" -T "$secs" -f "$work/select.sql"
    check_pgbench "mem-p" "$j"
    row "select $mem_conns conn, --graph --json: peak RSS MB" "$(mb "$y_mem")" "$(mb "$RSS_KB") (pgbench)" "$(ratio "$y_mem" "$RSS_KB")" ""
    row "peak RSS growth per connection, 4 → $mem_conns conn: KB" \
        "$(awk -v a="$y_mem" -v b="$y_mem4" -v n=$((mem_conns - clients)) 'BEGIN { printf "%.1f", (a - b) / n }')" "–" "–" "4 conn: $(mb "$y_mem4") MB"
    say "peak RSS: select ${rss_secs} s, $clients conn, --graph"
    run rss-select "$ysql" -u "$url" -o select -t "$clients" -r "$rows" --time "${rss_secs}s" --graph --graph-dir "$work/graph"
    row "select ${rss_secs} s, $clients conn, --graph: peak RSS MB" "$(mb "$RSS_KB")" "–" "–" ""
fi

# --- copy-mem vs psql \copy, and insert ---------------------------------------------------------
if has copy; then
    say "csv for psql \\copy"
    run csv1 "$csvgen" -r "$rows" -t 1 -j 1 -d "$work/csv" --seed "$seed"
    csv_file=$(head -n 1 "$work/csv1.out")
    y1=() y4=() pr=()
    for i in $(seq 1 "$reps"); do
        say "copy $i/$reps: ysql-bench copy-mem -t 1"
        sql "truncate test_table; checkpoint" >/dev/null
        run "copy1-$i" "$ysql" -u "$url" --seed "$seed" -o copy-mem -r "$rows" -t 1 -b "$copy_batch"
        y1+=("$(field "$work/copy1-$i.out" "rows/s")")
        say "copy $i/$reps: psql \\copy"
        sql "truncate test_table; checkpoint" >/dev/null
        run "psqlcopy-$i" "$psql" "$url" -X -q -v ON_ERROR_STOP=1 \
            -c "\\copy test_table (id, f1, f2, f3, f4) from '$csv_file' with (format csv)"
        pr+=("$(div "$rows" "$WALL" 1 %.1f)")
        say "copy $i/$reps: ysql-bench copy-mem -t $clients"
        sql "truncate test_table; checkpoint" >/dev/null
        run "copy4-$i" "$ysql" -u "$url" --seed "$seed" -o copy-mem -r "$rows" -t "$clients" -b "$copy_batch"
        y4+=("$(field "$work/copy4-$i.out" "rows/s")")
    done
    rm -f "$csv_file"
    b=$(median "${pr[@]}")
    a=$(median "${y1[@]}")
    row "copy-mem $rows rows, batch $copy_batch, 1 thread: rows/s" "$a" "$b (psql \\copy, whole process)" "$(ratio "$a" "$b")" "${y1[*]} / ${pr[*]}"
    a=$(median "${y4[@]}")
    row "copy-mem, $clients threads: rows/s" "$a" "$b (psql \\copy)" "$(ratio "$a" "$b")" "${y4[*]} / ${pr[*]}"

    ir=() ic=()
    for i in $(seq 1 "$reps"); do
        say "insert $i/$reps"
        sql "checkpoint" >/dev/null
        run "insert-$i" "$ysql" -u "$url" --seed "$seed" -o insert -r "$rows" -t "$clients" -b 200
        ir+=("$(field "$work/insert-$i.out" "rows/s")")
        ic+=("$(div "$CPU" "$rows" 1e6 %.3f)")
    done
    row "insert $rows rows, batch 200, $clients threads: rows/s" "$(median "${ir[@]}")" "–" "–" "${ir[*]}"
    row "insert: client CPU µs/row" "$(median "${ic[@]}")" "–" "–" "${ic[*]}"

    say "peak RSS: copy-mem $big_rows rows"
    run rss-copy "$ysql" -u "$url" --seed "$seed" -o copy-mem -r "$big_rows" -t "$clients" -b "$copy_batch"
    row "copy-mem $big_rows rows, $clients threads, batch $copy_batch: peak RSS MB" "$(mb "$RSS_KB")" "–" "–" "rows/s $(field "$work/rss-copy.out" "rows/s")"
    sql "truncate test_table" >/dev/null
fi

# --- csv_generator ---------------------------------------------------------------------------
if has csv; then
    for n in "$csv_small" "$csv_big"; do
        for t in 1 2; do
            mbs=()
            for i in $(seq 1 "$reps"); do
                say "csv_generator $n rows, $t threads ($i/$reps)"
                run "csv-$n-$t-$i" "$csvgen" -r "$n" -t "$t" -j "$t" -d "$work/csv" --seed "$seed"
                mbs+=("$(sed -n 's/.*(\([0-9.]*\) MB\/s).*/\1/p' "$work/csv-$n-$t-$i.err")")
                rm -f "$work"/csv/*.csv
            done
            row "csv_generator $n rows, $t threads: MB/s" "$(median "${mbs[@]}")" "–" "–" "${mbs[*]}"
        done
    done
fi

# --- report -------------------------------------------------------------------------------------
server_version=$(sql "show server_version")
load_after=$(cut -d" " -f1-3 /proc/loadavg)
mode=full; [ "$quick" = 1 ] && mode="quick (sizes too small for the figures to mean anything)"
{
    echo "### $(date -u '+%Y-%m-%d %H:%M UTC'), $mode"
    echo
    echo "- machine: $cores cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), load average before the run: $load_before, after: $load_after"
    echo "- server: PostgreSQL $server_version on 127.0.0.1 (TCP), ${server_settings[*]}"
    echo "- clients: ysql-bench $("$ysql" --version | awk '{ print $2 }') ($build, commit $commit), $("$pgbench" --version), $("$psql" --version)"
    if [ ${#results[@]} -gt 0 ]; then
        echo "- other figures: $reps repetition(s) of $secs s per pair, alternating; medians shown, every run listed as ysql-bench / peer; queries (and -C's connections, one query each) counted on the server as index scans"
    fi
    if [ ${#sweep_rows[@]} -gt 0 ]; then
        echo
        echo "Sweep: $reps pair(s) of $secs s per point, the first tool alternating; ratios are ysql-bench / pgbench per pair, median (min–max); the other columns are medians, ysql-bench / pgbench. A unit is a transaction (a query for the pipeline points), counted on the server; CPU is user+system of the whole client process, user µs the user part. pgbench: \`-n -M prepared -j <min(conn, $cores)>\`, its -T lengthened by its connecting time so that both tools query for about $secs s; TLS: sslmode=require on both (ysql-bench reported ${tls_seen:-no TLS run}), self-signed RSA 2048 certificate; builtins on pgbench -i -s $scale."
        echo
        echo "| workload | transport | conn | pairs | CPU/unit ratio | units/s ratio | CPU µs/unit | user µs/unit | units/s | peak RSS MB |"
        echo "|---|---|---|---|---|---|---|---|---|---|"
        printf '%s\n' "${sweep_rows[@]}"
        for mode in disable require; do
            m=${y_rss_max[$mode]}
            awk -v m="$m" 'BEGIN { exit !(m > 0) }' || continue
            verdict="met"; awk -v m="$m" 'BEGIN { exit !(m > 40) }' && verdict="NOT met"
            echo
            echo "ysql-bench's largest peak RSS at 1000 connections or more, $([ "$mode" = require ] && echo TLS || echo plain): $m MB (goal ≤ 40 MB: $verdict)."
        done
    fi
    if [ ${#profile_rows[@]} -gt 0 ]; then
        echo
        echo "Profile (--profile): one run of each tool per point under \`perf stat\` (software events and tracepoints), $secs s, per unit counted on the server. CPU is GNU time's user+system of the run, so it includes what tracing the system calls cost. Waits are epoll_wait, ppoll and poll; read/write the calls besides send and recv; wake-ups the tasks woken in the client's own context (on its core); IPIs the interrupts it sent to the other core, which is how a wake-up of a task there shows."
        echo
        echo "| workload | transport | conn | tool | units | CPU µs | user µs | syscalls | send | recv | read/write | waits | futex | context switches | wake-ups | IPIs |"
        echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        printf '%s\n' "${profile_rows[@]}"
    fi
    if [ ${#callgrind_rows[@]} -gt 0 ]; then
        echo
        echo "Callgrind (--callgrind): the whole client process (all threads), instructions and simulated cache misses per unit (I1, D1: 32 KB 8-way; LL: 1 MB 16-way; 64-byte lines), the difference of two runs over the units between them, counted on the server. User space only: the kernel's share of a unit is not in it. Counts include each tool's time-driven work (ysql-bench's once-a-second figures), which valgrind's slowness spreads over fewer units: compare the tools within this table, not with other runs."
        echo
        echo "| workload | transport | conn | tool | units between | instructions | I1 misses | D1 misses | LL misses |"
        echo "|---|---|---|---|---|---|---|---|---|"
        printf '%s\n' "${callgrind_rows[@]}"
    fi
    for s in "${skipped[@]}"; do echo; echo "Skipped: $s."; done
    if [ ${#results[@]} -gt 0 ]; then
        echo
        echo "| figure | ysql-bench | peer | ratio | runs |"
        echo "|---|---|---|---|---|"
        printf '%s\n' "${results[@]}"
    fi
} >"$work/report.md"
cat "$work/report.md"
if [ -n "$record" ]; then
    { echo; cat "$work/report.md"; } >>"$record"
    say "appended to $record"
fi
