#!/usr/bin/env bash
# Installs and builds what a make target runs, side by side:
#
#   hack/deps.sh [--node] [--no-prometheus2] TOOL...
#
# Debian's packages (hack/install-prometheus.sh, Prometheus 2, unless
# --no-prometheus2: the real-node demo runs Prometheus 3 from
# hack/build-tools.sh prometheus3; with --node also hack/install-node.sh:
# containerd, runc, CNI plugins) install in the background while hack/build-tools.sh builds TOOL... in the foreground: apt
# waits on the network and dpkg, the tool build on the CPU, so on a fresh
# machine the packages cost no wall time. The installers' output goes to a log
# printed when they are done. Exits non-zero if either part failed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
node=0 prometheus2=1
while [[ "${1:-}" == --* ]]; do
  case "$1" in
  --node) node=1 ;;
  --no-prometheus2) prometheus2=0 ;;
  *) echo "deps: unknown flag $1" >&2; exit 2 ;;
  esac
  shift
done

log=$(mktemp "${TMPDIR:-/tmp}/ebbflow-deps.XXXXXX")
trap 'rm -f "${log}"' EXIT
(
  if [[ ${node} == 1 ]]; then "${ROOT}/hack/install-node.sh"; fi
  if [[ ${prometheus2} == 1 ]]; then "${ROOT}/hack/install-prometheus.sh"; fi
) >"${log}" 2>&1 &
installer=$!
# When tools are to be built, the main module's modules download meanwhile:
# its builds come after the tools.
modules=""
if [[ -n "$("${ROOT}/hack/build-tools.sh" --missing "$@")" ]]; then
  (cd "${ROOT}" && GOFLAGS="${GOFLAGS:-} -mod=readonly" nice -n 10 go list -deps ./... >/dev/null 2>&1) &
  modules=$!
fi

built=0
"${ROOT}/hack/build-tools.sh" "$@" || built=$?

installed=0
wait "${installer}" || installed=$?
[[ -z "${modules}" ]] || wait "${modules}" || true
cat "${log}" >&2
if [[ ${installed} != 0 ]]; then
  echo "deps: installing Debian's packages failed (exit ${installed}; output above)" >&2
fi
[[ ${built} == 0 && ${installed} == 0 ]]
