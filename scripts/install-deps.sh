#!/usr/bin/env bash
# Installs the system packages that are missing, Debian/Ubuntu only;
# elsewhere it says what to install and carries on.
#
#   scripts/install-deps.sh                 what the tests need: PostgreSQL's
#       server binaries (for the sandbox servers) and psql, haproxy and
#       PgBouncer (for the multi-node and pooler tests), GNU time
#       (bench/compare.sh measures client CPU and peak RSS with it), the
#       openssl command (compare.sh's TLS points make a certificate with it),
#       Chromium (tests/html.rs opens the HTML report pages headless),
#       Prometheus (tests/metrics.rs scrapes --metrics-addr with it), perf
#       and valgrind (compare.sh --profile and --callgrind)
#   scripts/install-deps.sh --sandbox-only  only PostgreSQL's server
#       binaries, all that `ysql-bench --sandbox` (the quick start) needs
set -euo pipefail

sandbox_only=0
case "${1:-}" in
    "") ;;
    --sandbox-only) sandbox_only=1 ;;
    *) echo "error: unknown option $1 (use --sandbox-only, or nothing)" >&2; exit 2 ;;
esac

missing=()
have_pg_server() {
    command -v initdb >/dev/null 2>&1 && command -v postgres >/dev/null 2>&1 && return 0
    ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1
}
have_pg_server || missing+=(postgresql)
if [ "$sandbox_only" = 0 ]; then
    command -v psql >/dev/null 2>&1 || missing+=(postgresql-client)
    command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || missing+=(haproxy)
    command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ] || missing+=(pgbouncer)
command -v sysbench >/dev/null 2>&1 || missing+=(sysbench)
    [ -x /usr/bin/time ] || missing+=(time)
    command -v openssl >/dev/null 2>&1 || missing+=(openssl)
    # tests/html.rs opens the report pages in headless Chromium.
    command -v chromium >/dev/null 2>&1 || missing+=(chromium)
    # tests/metrics.rs starts its own Prometheus (never the package's
    # service) to scrape --metrics-addr.
    [ -x /usr/bin/prometheus ] || command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
    # compare.sh --profile (perf stat's software events and tracepoints)
    # and --callgrind.
    command -v perf >/dev/null 2>&1 || missing+=(linux-perf)
    command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
fi

# The Kubernetes manifests are validated offline by the PyPI package
# kubernetes-validate (tests/kubernetes.rs), which carries the schemas.
if [ "$sandbox_only" = 0 ] && ! command -v kubernetes-validate >/dev/null 2>&1; then
    if command -v python3 >/dev/null 2>&1; then
        python3 -m pip install -q kubernetes-validate >/dev/null 2>&1 \
            || echo "warning: pip could not install kubernetes-validate; tests/kubernetes.rs will skip" >&2
    else
        echo "warning: no python3; tests/kubernetes.rs will skip the manifest validation" >&2
    fi
fi

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
echo "installing: ${missing[*]}" >&2
if ! command -v apt-get >/dev/null 2>&1; then
    echo "warning: no apt-get here; install ${missing[*]} with your package manager" >&2
    exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
        echo "warning: not root and no sudo; install ${missing[*]} yourself" >&2
        exit 0
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
