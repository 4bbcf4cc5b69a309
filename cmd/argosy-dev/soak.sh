#!/usr/bin/env bash
# soak.sh: run argosy-dev with a fleet for a while and sample, every
# interval, its resident memory, heap, goroutines, open files and
# readiness to a CSV, to see that they stay flat (docs/dev.md, "What it
# holds"). make dev-soak runs it; every setting is an environment
# variable:
#
#   SOAK_BIN       the argosy-dev binary            (bin/argosy-dev)
#   SOAK_CLUSTERS  --clusters                       (1000)
#   SOAK_FOR       how long, in seconds             (3600)
#   SOAK_EVERY     seconds between samples          (60)
#   SOAK_OUT       the CSV                          (dev-soak-CLUSTERS-DATE.csv)
#   SOAK_LISTEN    the hub's address                (127.0.0.1:18090)
#   SOAK_METRICS   the metrics address              (127.0.0.1:19490)
#   SOAK_ARGS      more flags for argosy-dev
#   SOAK_NOFILE    the open-file limit to ask for  (32768; argosy-dev
#                  refuses a fleet the limit cannot hold, and says so)
#
# Go's profiles are on: go tool pprof http://SOAK_METRICS/debug/pprof/heap
# while it runs.
#
# The data directory is a new temporary one, removed at the end; the
# process's log is kept beside the CSV (.log). It stops argosy-dev with
# SIGINT, by its process id, and exits 1 if argosy-dev stopped before the
# time was up or was not ready at the last sample.
set -euo pipefail

bin=${SOAK_BIN:-bin/argosy-dev}
clusters=${SOAK_CLUSTERS:-1000}
duration=${SOAK_FOR:-3600}
every=${SOAK_EVERY:-60}
out=${SOAK_OUT:-dev-soak-$clusters-$(date -u +%Y%m%dT%H%M%SZ).csv}
listen=${SOAK_LISTEN:-127.0.0.1:18090}
metrics=${SOAK_METRICS:-127.0.0.1:19490}
data=$(mktemp -d)
ulimit -n "${SOAK_NOFILE:-32768}" 2>/dev/null || echo "open-file limit stays $(ulimit -n)" >&2
log=${out%.csv}.log

ARGOSY_PPROF=true "$bin" --clusters "$clusters" --data-dir "$data" --listen "$listen" --metrics-address "$metrics" ${SOAK_ARGS:-} >"$log" 2>&1 &
pid=$!
stop() {
	if kill -0 "$pid" 2>/dev/null; then
		kill -INT "$pid"
		wait "$pid" || true
	fi
	rm -rf "$data"
}
trap stop EXIT

until [ -f "$data/dev.json" ]; do
	kill -0 "$pid" 2>/dev/null || { echo "argosy-dev stopped before it was ready; see $log" >&2; exit 1; }
	sleep 1
done
echo "argosy-dev ($pid) is ready with $clusters clusters; sampling every ${every}s for ${duration}s to $out"

metric() { awk -v m="$1" '$1 == m { printf "%.0f", $2 }' <<<"$2"; }
echo "time,elapsed_s,rss_mib,heap_inuse_mib,goroutines,open_files,ready" >"$out"
start=$(date +%s)
ready=0
while :; do
	now=$(date +%s)
	kill -0 "$pid" 2>/dev/null || { echo "argosy-dev stopped after $((now - start))s; see $log" >&2; exit 1; }
	m=$(curl -fsS --max-time 10 "http://$metrics/metrics" || true)
	rss=$(awk '/^VmRSS:/ { printf "%d", $2 / 1024 }' "/proc/$pid/status")
	fds=$(ls "/proc/$pid/fd" | wc -l)
	heap=$(metric go_memstats_heap_inuse_bytes "$m")
	ready=0
	curl -fsS --max-time 10 -o /dev/null "http://$metrics/readyz" && ready=1
	echo "$(date -u +%FT%TZ),$((now - start)),$rss,$((${heap:-0} / 1048576)),$(metric go_goroutines "$m"),$fds,$ready" | tee -a "$out"
	[ $((now - start)) -ge "$duration" ] && break
	sleep "$every"
done
[ "$ready" = 1 ] || { echo "argosy-dev was not ready at the last sample; see $log" >&2; exit 1; }
