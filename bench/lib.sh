# Shared by the scripts in bench/ (sourced, not run).

# median X...: the median of the numbers, the mean of the middle two for an
# even count (printed in full, never in exponent form).
median() {
    printf '%s\n' "$@" | sort -g |
        awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.12g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# --- a throwaway PostgreSQL server ---------------------------------------------
# One copy for bench/*.sh and scripts/docs-commands.sh. The caller sets
# `work` (a fresh temporary directory) and calls, in order:
#   find_pg_bin        sets pg_bin (YSQLBENCH_PG_BINDIR, pg_config, or the
#                      newest /usr/lib/postgresql/*/bin) or exits 1
#   server_init        initdb in $work/data, superuser postgres, trust auth
#   server_start ARGS  starts it on a free port with the given
#                      `-c name=value` settings; sets port and server_pid
#   stop_server        fast shutdown (also from the EXIT trap: server_cleanup)
# As root the server runs as the postgres user, since PostgreSQL refuses root.

find_pg_bin() {
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
}
# tool NAME: the binary itself where the server's directory has it (Debian
# puts pgbench with the server, psql with the client; both have wrappers on
# PATH, and GNU time should measure the program, not a wrapper).
tool() { if [ -x "$pg_bin/$1" ]; then echo "$pg_bin/$1"; else command -v "$1" || true; fi; }

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
server_cleanup() {
    stop_server
    rm -rf "$work"
}

as_server=()
server_init() {
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || { echo "error: running as root needs a 'postgres' user for the server" >&2; exit 1; }
        chown postgres: "$work"
        as_server=(runuser -u postgres --)
    fi
    chmod 755 "$work"
    "${as_server[@]}" "$pg_bin/initdb" -D "$work/data" -U postgres -A trust -E UTF8 --locale=C --no-sync \
        >"$work/initdb.log" 2>&1 || { cat "$work/initdb.log" >&2; exit 1; }
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
server_start() {
    local p
    port=""
    for _ in $(seq 1 20); do
        p=$((20000 + RANDOM % 30000))
        port_in_use "$p" && continue
        "${as_server[@]}" "$pg_bin/postgres" -D "$work/data" -p "$p" -k "$work" "$@" \
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
}

# --- measuring ----------------------------------------------------------------
# timed_run NAME cmd...: runs a client under GNU time; leaves $work/NAME.out
# and NAME.err, and sets CPU (user+system seconds), UCPU (user seconds),
# RSS_KB and WALL (seconds).
# `run` is the same unless a script defines its own around it.
timed_run() {
    local name=$1; shift
    local t0 t1 u s
    t0=$(date +%s%N)
    if ! /usr/bin/time -f '%U %S %M' -o "$work/$name.time" "$@" >"$work/$name.out" 2>"$work/$name.err"; then
        echo "error: $name failed: $*" >&2
        tail -n 20 "$work/$name.err" >&2
        tail -n 20 "$work/$name.out" >&2
        exit 1
    fi
    t1=$(date +%s%N)
    WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", (b - a) / 1e9 }')
    read -r u s RSS_KB < <(tail -n 1 "$work/$name.time")
    CPU=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.3f", u + s }')
    UCPU=$u
}
run() { timed_run "$@"; }
# field FILE LABEL: the value after "LABEL :" in a ysql-bench summary.
field() { awk -F': *' -v l="$2" '$1 ~ "^"l" *$" { split($2, a, " "); print a[1]; exit }' "$1"; }
