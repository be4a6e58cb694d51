#!/usr/bin/env bash
# What --metrics-addr costs the client (issue 27): the same select run on
# one throwaway PostgreSQL server without the endpoint, and with it scraped
# every second, alternated (A B, then B A, ...) so that drift of the
# machine falls on both. Client CPU is GNU time's user+system of the whole
# ysql-bench process over the units it ran (µs per unit); throughput is the
# summary's queries/s. The scraper is curl in a loop (`curl` reading
# /metrics once a second, as a Prometheus with scrape_interval 1s would);
# its own CPU is not the client's and is not counted. Also the size of one
# scrape and how long the answer took. No server-statistics connection
# (--no-server-stats), so that only the endpoint differs.
# Prints the medians as Markdown that can go into bench/RESULTS.md.
#
#   bench/metrics.sh               5 pairs of 10 s runs, -t 4 (release build)
#   bench/metrics.sh --quick       1 pair of 2 s runs, debug build: proves
#                                  the script works, asserts nothing
#   options: --pairs N     pairs of runs (5)
#            --secs S      seconds per run (10)
#            --threads T   connections (4)
#            --rate R      --rate of the runs (none): equal work in both, so
#                          that the CPU difference is the endpoint's
#            --every S     seconds between scrapes (1); e.g. 0.05 to make
#                          one scrape's cost stand out of the noise
#            --bin-dir DIR use the binary in DIR, build nothing
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# median, the throwaway server (find_pg_bin, server_init, server_start), run, field
. "$here/lib.sh"
repo=$(cd "$here/.." && pwd)

quick=0
pairs=""
secs=""
threads=4
rate=""
every=1
bin_dir=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1 ;;
        --pairs) pairs=${2:?--pairs needs a number}; shift ;;
        --secs) secs=${2:?--secs needs a number}; shift ;;
        --threads) threads=${2:?--threads needs a number}; shift ;;
        --rate) rate=${2:?--rate needs a number}; shift ;;
        --every) every=${2:?--every needs seconds}; shift ;;
        --bin-dir) bin_dir=${2:?--bin-dir needs a directory}; shift ;;
        -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "error: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
if [ "$quick" = 1 ]; then
    pairs=${pairs:-1}; secs=${secs:-2}; profile=debug
else
    pairs=${pairs:-5}; secs=${secs:-10}; profile=release
fi
command -v curl >/dev/null 2>&1 || { echo "error: curl is needed for the scraper" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "error: GNU time is needed (scripts/install-deps.sh)" >&2; exit 1; }

if [ -z "$bin_dir" ]; then
    if [ "$profile" = release ]; then
        (cd "$repo" && cargo build --release -q --bin ysql-bench)
    else
        (cd "$repo" && cargo build -q --bin ysql-bench)
    fi
    bin_dir=$repo/target/$profile
fi
bench=$bin_dir/ysql-bench

work=$(mktemp -d)
scraper=""
cleanup() {
    [ -z "$scraper" ] || kill "$scraper" 2>/dev/null || true
    server_cleanup
}
trap cleanup EXIT
find_pg_bin
server_init
server_start -c fsync=off -c synchronous_commit=off
url="host=127.0.0.1 port=$port user=postgres dbname=postgres"
"$bench" -u "$url" -o copy-mem -r 100000 -t 2 -q >/dev/null

free_port() {
    local p
    for _ in $(seq 1 50); do
        p=$((20000 + RANDOM % 30000))
        port_in_use "$p" || { echo "$p"; return; }
    done
    echo "error: no free port" >&2; exit 1
}

cpu_plain=(); cpu_scraped=(); qps_plain=(); qps_scraped=(); secs_plain=(); secs_scraped=(); sizes=(); times=()
one() {
    local name=$1 with=$2 mport=""
    local args=(-u "$url" -o select -r 100000 -t "$threads" --time "${secs}s" --no-server-stats -q)
    [ -z "$rate" ] || args+=(--rate "$rate")
    if [ "$with" = 1 ]; then
        mport=$(free_port)
        args+=(--metrics-addr "127.0.0.1:$mport" --metrics-linger 0)
        (
            while sleep "$every"; do
                curl -s -o /dev/null -w '%{size_download} %{time_total}\n' \
                    "http://127.0.0.1:$mport/metrics" >>"$work/scrapes.txt" 2>/dev/null || true
            done
        ) &
        scraper=$!
    fi
    run "$name" "$bench" "${args[@]}"
    if [ -n "$scraper" ]; then kill "$scraper" 2>/dev/null || true; wait "$scraper" 2>/dev/null || true; scraper=""; fi
    local n q
    n=$(field "$work/$name.out" "nr queries")
    q=$(field "$work/$name.out" "queries/s")
    local us
    us=$(awk -v c="$CPU" -v n="$n" 'BEGIN { printf "%.3f", c * 1e6 / n }')
    if [ "$with" = 1 ]; then
        cpu_scraped+=("$us"); qps_scraped+=("$q"); secs_scraped+=("$CPU")
    else
        cpu_plain+=("$us"); qps_plain+=("$q"); secs_plain+=("$CPU")
    fi
    echo "  $name: $n queries, $q/s, client CPU $CPU s = $us µs per query" >&2
}
for i in $(seq 1 "$pairs"); do
    if [ $((i % 2)) = 1 ]; then one "plain-$i" 0; one "scraped-$i" 1; else one "scraped-$i" 1; one "plain-$i" 0; fi
done
while read -r size t; do [ "$size" -gt 0 ] 2>/dev/null && sizes+=("$size") && times+=("$t"); done <"$work/scrapes.txt"

cp=$(median "${cpu_plain[@]}"); cs=$(median "${cpu_scraped[@]}")
qp=$(median "${qps_plain[@]}"); qs=$(median "${qps_scraped[@]}")
mode=full; [ "$quick" = 1 ] && mode="quick (too short for the figures to mean anything)"
cat <<EOF

### --metrics-addr scraped every ${every} s vs none ($mode)

select, $threads connections${rate:+, --rate $rate}, ${secs} s runs, $pairs alternated pairs, $profile build, medians:

| | without | scraped every ${every} s | ratio |
|---|---|---|---|
| client CPU per query (µs) | $cp | $cs | $(awk -v a="$cs" -v b="$cp" 'BEGIN { printf "%.3f", a / b }') |
| queries/s | $qp | $qs | $(awk -v a="$qs" -v b="$qp" 'BEGIN { printf "%.3f", a / b }') |
| client CPU per run (s) | $(median "${secs_plain[@]}") | $(median "${secs_scraped[@]}") | |

One scrape: median $(median "${sizes[@]:-0}") bytes, answered in median $(median "${times[@]:-0}") s (${#sizes[@]} scrapes).
Each run's CPU per query, without: ${cpu_plain[*]}; scraped: ${cpu_scraped[*]}.
EOF
