#!/usr/bin/env bash
# Side-by-side benchmark of ysql-bench against pgbench and psql (issue 7).
#
# Starts one throwaway PostgreSQL server that both tools share, loads a
# test_table, and runs each pair alternately (A B A B ...) so that drift in
# the machine's load hits both sides alike. Prints the median of each figure
# and the ratio ysql-bench / peer, as a Markdown block that can be recorded
# in bench/RESULTS.md.
#
# Client CPU is user+system time of the client process (GNU time), divided
# by the queries or rows it did; peak RSS is GNU time's %M.
#
#   bench/compare.sh                    full run (about 8 minutes)
#   bench/compare.sh --quick            tiny sizes, short runs, one repetition:
#                                       proves the script works, asserts nothing
#   options: --reps N  --record FILE (append the results)  --bin-dir DIR
#            --keep-going (a failed pair is reported, not fatal)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)

quick=0
reps=""
record=""
bin_dir=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1 ;;
        --reps) reps=${2:?--reps needs a number}; shift ;;
        --record) record=${2:?--record needs a file}; shift ;;
        --bin-dir) bin_dir=${2:?--bin-dir needs a directory}; shift ;;
        -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "error: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

if [ "$quick" = 1 ]; then
    rows=20000; secs=1; rss_secs=2; big_rows=200000
    copy_batch=1000; csv_small=20000; csv_big=200000
    reps=${reps:-1}; profile=debug
else
    rows=1000000; secs=15; rss_secs=60; big_rows=10000000
    copy_batch=10000; csv_small=1000000; csv_big=10000000
    reps=${reps:-3}; profile=release
fi
case "$reps" in ''|*[!0-9]*|0) echo "error: --reps must be a whole number of at least 1" >&2; exit 2 ;; esac
clients=4
cores=$(nproc)
seed=42
load_before=$(cut -d" " -f1-3 /proc/loadavg)

# --- tools -------------------------------------------------------------------
[ -x /usr/bin/time ] || { echo "error: /usr/bin/time (GNU time) not found: install the 'time' package (scripts/install-deps.sh)" >&2; exit 1; }
pg_bin=${YSQLBENCH_PG_BINDIR:-}
if [ -z "$pg_bin" ]; then
    if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then
        pg_bin=$(pg_config --bindir)
    else
        pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    fi
fi
[ -n "$pg_bin" ] && [ -x "$pg_bin/initdb" ] && [ -x "$pg_bin/postgres" ] ||
    { echo "error: no initdb/postgres found (set YSQLBENCH_PG_BINDIR, or run scripts/install-deps.sh)" >&2; exit 1; }
# Debian puts pgbench with the server, psql with the client; both have
# wrappers on PATH.
tool() { if [ -x "$pg_bin/$1" ]; then echo "$pg_bin/$1"; else command -v "$1" || true; fi; }
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
csvgen=$bin_dir/csv_generator
[ -x "$ysql" ] && [ -x "$csvgen" ] || { echo "error: no ysql-bench/csv_generator in $bin_dir" >&2; exit 1; }

# --- the server ----------------------------------------------------------------
work=$(mktemp -d /tmp/ysql-bench-compare.XXXXXX)
server_pid=""
# The postmaster's own pid (runuser stays in between when we are root, and
# does not pass signals on): from postmaster.pid once the server runs.
postmaster_pid() { head -n 1 "$work/data/postmaster.pid" 2>/dev/null || true; }
stop_server() {
    local pid
    pid=$(postmaster_pid)
    [ -n "$pid" ] || pid=$server_pid
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -INT "$pid" 2>/dev/null || true   # fast shutdown
        for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    [ -z "$server_pid" ] || wait "$server_pid" 2>/dev/null || true
    server_pid=""
}
cleanup() {
    stop_server
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

as_server=()
if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || { echo "error: running as root needs a 'postgres' user for the server" >&2; exit 1; }
    chown postgres: "$work"
    as_server=(runuser -u postgres --)
fi
chmod 755 "$work"
mkdir -p "$work/csv"

"${as_server[@]}" "$pg_bin/initdb" -D "$work/data" -U postgres -A trust -E UTF8 --locale=C --no-sync \
    >"$work/initdb.log" 2>&1 || { cat "$work/initdb.log" >&2; exit 1; }

# Durable by default (fsync on), but commits do not wait for the WAL flush:
# otherwise the update pair measures the disk's fsync latency, the same for
# both tools, instead of the clients. shared_buffers holds the whole table.
server_settings=(-c listen_addresses=127.0.0.1 -c max_connections=50
    -c synchronous_commit=off -c shared_buffers=1GB -c max_wal_size=4GB)
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
port=""
for _ in $(seq 1 20); do
    p=$((20000 + RANDOM % 30000))
    port_in_use "$p" && continue
    "${as_server[@]}" "$pg_bin/postgres" -D "$work/data" -p "$p" -k "$work" "${server_settings[@]}" \
        >"$work/postgres.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 1 300); do
        kill -0 "$server_pid" 2>/dev/null || break
        if "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$p" 2>/dev/null; then port=$p; break; fi
        sleep 0.1
    done
    [ -n "$port" ] && break
    stop_server
    grep -q "could not bind" "$work/postgres.log" || { cat "$work/postgres.log" >&2; exit 1; }
done
[ -n "$port" ] || { echo "error: the server did not start on a free port" >&2; exit 1; }

url="host=127.0.0.1 port=$port user=postgres dbname=postgres"
pg_conn=(-h 127.0.0.1 -p "$port" -U postgres -d postgres)
sql() { "$psql" "${pg_conn[@]}" -X -q -A -t -v ON_ERROR_STOP=1 -c "$1"; }

# --- measuring ------------------------------------------------------------------
# run NAME cmd...: runs a client under GNU time; leaves NAME.out, NAME.err and
# sets CPU (user+system seconds), RSS_KB and WALL (seconds).
run() {
    local name=$1; shift
    local t0 t1
    t0=$(date +%s%N)
    if ! /usr/bin/time -f '%U %S %M' -o "$work/$name.time" "$@" >"$work/$name.out" 2>"$work/$name.err"; then
        echo "error: $name failed: $*" >&2
        tail -n 20 "$work/$name.err" >&2
        exit 1
    fi
    t1=$(date +%s%N)
    WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", (b - a) / 1e9 }')
    read -r u s RSS_KB < <(tail -n 1 "$work/$name.time")
    CPU=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.3f", u + s }')
}
# field FILE LABEL: the value after "LABEL :" in a ysql-bench summary.
field() { awk -F': *' -v l="$2" '$1 ~ "^"l" *$" { split($2, a, " "); print a[1]; exit }' "$1"; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# div A B [SCALE [FORMAT]]: A * SCALE / B.
div() { awk -v a="$1" -v b="$2" -v s="${3:-1}" -v f="${4:-%.2f}" 'BEGIN { if (b > 0) printf f, a * s / b; else print "n/a" }'; }
num() { awk -v a="$1" 'BEGIN { printf "%.1f", a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

results=()
row() { results+=("| $1 | $2 | $3 | $4 | $5 |"); }
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

# query_pair OP: select or update, ysql-bench vs pgbench -M prepared.
query_pair() {
    local op=$1 i
    local yq=() yc=() pq=() pc=()
    local extra=()
    [ "$op" = update ] && extra=("${upd_vars[@]}")
    for i in $(seq 1 "$reps"); do
        say "$op $i/$reps: ysql-bench"
        run "$op-y$i" "$ysql" -u "$url" --seed "$((seed + i))" -o "$op" -t "$clients" -r "$rows" --time "${secs}s"
        local n q
        n=$(field "$work/$op-y$i.out" "nr queries")
        q=$(field "$work/$op-y$i.out" "queries/s")
        yq+=("$q"); yc+=("$(div "$CPU" "$n" 1e6)")
        say "$op $i/$reps: pgbench"
        run "$op-p$i" "$pgbench" "${pg_conn[@]}" -n -M prepared -c "$clients" -j "$cores" -T "$secs" \
            -f "$work/$op.sql" "${extra[@]}"
        n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/$op-p$i.out")
        q=$(num "$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/$op-p$i.out")")
        pq+=("$q"); pc+=("$(div "$CPU" "$n" 1e6)")
    done
    local a b
    a=$(median "${yq[@]}"); b=$(median "${pq[@]}")
    row "$op, $clients conn, ${secs} s: queries/s" "$a" "$b (pgbench -M prepared -j $cores)" "$(ratio "$a" "$b")" "${yq[*]} / ${pq[*]}"
    a=$(median "${yc[@]}"); b=$(median "${pc[@]}")
    row "$op: client CPU µs/query" "$a" "$b" "$(ratio "$a" "$b")" "${yc[*]} / ${pc[*]}"
}

query_pair select
query_pair update

# --- copy-mem vs psql \copy ------------------------------------------------------------
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
    run "psqlcopy-$i" "$psql" "${pg_conn[@]}" -X -q -v ON_ERROR_STOP=1 \
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

# --- insert -------------------------------------------------------------------------------
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

# --- peak RSS -------------------------------------------------------------------------------
graph=()
if "$ysql" --help | grep -q -- '--graph'; then
    mkdir -p "$work/graph"
    graph=(--graph --graph-dir "$work/graph")
    label="select ${rss_secs} s, $clients conn, --graph: peak RSS MB"
else
    label="select ${rss_secs} s, $clients conn (no --graph flag in this build): peak RSS MB"
fi
say "peak RSS: select ${rss_secs} s ${graph[*]}"
run rss-select "$ysql" -u "$url" -o select -t "$clients" -r "$rows" --time "${rss_secs}s" "${graph[@]}"
rss_select=$RSS_KB
row "$label" "$(div "$rss_select" 1024 1 %.1f)" "–" "–" ""
say "peak RSS: copy-mem $big_rows rows"
run rss-copy "$ysql" -u "$url" --seed "$seed" -o copy-mem -r "$big_rows" -t "$clients" -b "$copy_batch"
row "copy-mem $big_rows rows, $clients threads, batch $copy_batch: peak RSS MB" "$(div "$RSS_KB" 1024 1 %.1f)" "–" "–" "rows/s $(field "$work/rss-copy.out" "rows/s")"
sql "truncate test_table" >/dev/null

# --- csv_generator ---------------------------------------------------------------------------
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

# --- report -------------------------------------------------------------------------------------
server_version=$(sql "show server_version")
mode=full; [ "$quick" = 1 ] && mode="quick (sizes too small for the figures to mean anything)"
{
    echo "### $(date -u '+%Y-%m-%d %H:%M UTC'), $mode"
    echo
    echo "- machine: $cores cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), load average before the run: $load_before"
    echo "- server: PostgreSQL $server_version on 127.0.0.1 (TCP), ${server_settings[*]}"
    echo "- clients: ysql-bench $("$ysql" --version | awk '{ print $2 }') ($build, commit $(cd "$repo" && git describe --always --dirty 2>/dev/null || echo '?')), $("$pgbench" --version), $("$psql" --version)"
    echo "- $reps repetition(s) per pair, alternating; medians shown, every run listed as ysql-bench / peer"
    echo
    echo "| figure | ysql-bench | peer | ratio | runs |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${results[@]}"
} >"$work/report.md"
cat "$work/report.md"
if [ -n "$record" ]; then
    { echo; cat "$work/report.md"; } >>"$record"
    say "appended to $record"
fi
