#!/usr/bin/env bash
# Runs the Go benchmarks, keeps their raw output and prints a benchstat summary.
#
#   hack/bench.sh [PACKAGE_PATTERN...]          (default: ./...)
#
# Raw output (go test -bench format, with the machine described in '#' lines that
# benchstat ignores) goes to $BENCH_OUT/bench-<UTC date and time>.txt. Packages run
# one at a time (-p 1) so that benchmarks never share the CPUs with each other.
#
# Bounded: every benchmark runs for BENCH_TIME (default 1s) per count, and an op
# longer than that runs once per count (a 1M-series relist takes 10-25 s on 2
# cores), so the default run of ./... takes about 3 minutes on 2 busy cores,
# compiling included (docs/benchmarks.md); go test's -timeout stops a run that hangs.
#
# Environment:
#   BENCH_COUNT     -count, runs of each benchmark (default 3)
#   BENCH_TIME      -benchtime (default 1s)
#   BENCH           -bench regexp (default .)
#   BENCH_TIMEOUT   go test -timeout (default 30m)
#   BENCH_OUT       output directory (default <repo>/_output/bench)
#   BENCHSTAT       0 skips the benchstat summary (default 1)
#   BENCHSTAT_VERSION  golang.org/x/perf version run for benchstat
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
COUNT="${BENCH_COUNT:-3}"
BENCHTIME="${BENCH_TIME:-1s}"
PATTERN="${BENCH:-.}"
TIMEOUT="${BENCH_TIMEOUT:-30m}"
OUT_DIR="${BENCH_OUT:-${ROOT}/_output/bench}"
BENCHSTAT_VERSION="${BENCHSTAT_VERSION:-v0.0.0-20260908200009-22c9c6c9d4da}"

if ! [[ "${COUNT}" =~ ^[1-9][0-9]*$ ]]; then
	echo "bench.sh: BENCH_COUNT must be a positive integer, got '${COUNT}'" >&2
	exit 2
fi
if [[ $# -eq 0 ]]; then
	set -- ./...
fi

cd "${ROOT}"
mkdir -p "${OUT_DIR}"
OUT="${OUT_DIR}/bench-$(date -u +%Y%m%dT%H%M%SZ).txt"
CMD=(go test -p 1 -run '^$' -bench "${PATTERN}" -benchmem -count "${COUNT}" -benchtime "${BENCHTIME}" -timeout "${TIMEOUT}" "$@")

{
	echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "# command: ${CMD[*]}"
	echo "# commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (dirty)')"
	echo "# go: $(go version)"
	echo "# nproc: $(nproc)"
	echo "# cpu model: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)"
	echo "# loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
} >"${OUT}"
cat "${OUT}"

# A package that fails (or does not build) must not hide the others' results: the
# summary is printed anyway and the script exits with go test's status.
set +e
"${CMD[@]}" 2>&1 | tee -a "${OUT}"
STATUS=${PIPESTATUS[0]}
set -e
echo "# loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)" >>"${OUT}"
echo
echo "Raw results: ${OUT}"
if [[ ${STATUS} -ne 0 ]]; then
	echo "bench.sh: go test failed (status ${STATUS}); see the raw results" >&2
fi

if [[ "${BENCHSTAT:-1}" == 0 ]]; then
	exit "${STATUS}"
fi
benchstat() {
	go run "golang.org/x/perf/cmd/benchstat@${BENCHSTAT_VERSION}" "$@"
}
ERR=$(mktemp)
trap 'rm -f "${ERR}"' EXIT
if ! SUMMARY=$(benchstat "median=${OUT}" 2>"${ERR}"); then
	echo "benchstat (golang.org/x/perf@${BENCHSTAT_VERSION}) is not available; raw results only:" >&2
	sed -n '1,5p' "${ERR}" >&2
	exit "${STATUS}"
fi
echo
echo "${SUMMARY}"
if grep -q '/path=naive' "${OUT}"; then
	echo
	echo "Discovery, naive decoding (client_golang v1 Series) against the streamed relist:"
	benchstat -filter '.name:Discovery' -col /path "${OUT}" 2>>"${ERR}" || true
fi
exit "${STATUS}"
