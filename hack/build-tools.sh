#!/usr/bin/env bash
# Builds the pinned tools of the local cluster and the code generators from Go
# modules and caches them by version, so that a second run builds nothing.
#
#   hack/build-tools.sh [--force] [--print-paths | --missing] [TOOL...]
#
# Without TOOL, builds every tool of the default set (see --list). Versions
# come from hack/tools/versions.env; the modules that pin them (with go.sum)
# live under hack/tools/. A tool NAME at VERSION is cached in
#
#   $EBBFLOW_TOOLS_CACHE/NAME-VERSION/      (default: <repo>/.cache/tools)
#
# and linked from $EBBFLOW_TOOLS_CACHE/bin/. Progress goes to stderr. With
# --print-paths, stdout gets one KEY=VALUE line per path of the tools asked
# for, for scripts and Go code to read. With --missing, it builds nothing and
# prints the names of the tools not yet cached, one a line.
#
# Environment: EBBFLOW_TOOLS_CACHE (cache root), EBBFLOW_TOOLS_BUILD_P (go
# build -p, default: the number of CPUs; 1 leaves a shared machine a core),
# EBBFLOW_TOOLS_NICE (nice level, default 10).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
TOOLS_SRC="${ROOT}/hack/tools"
CACHE="${EBBFLOW_TOOLS_CACHE:-${ROOT}/.cache/tools}"
BUILD_P="${EBBFLOW_TOOLS_BUILD_P:-$(nproc)}"
NICE="${EBBFLOW_TOOLS_NICE:-10}"

# shellcheck source=tools/versions.env
source "${TOOLS_SRC}/versions.env"

DEFAULT_TOOLS=(kube-apiserver kube-controller-manager kubectl etcd kwok kustomize controller-gen code-generator)
EXTRA_TOOLS=(kube-scheduler kubelet kube-proxy helm thanos prometheus3 mimir victoria-metrics k8s-e2e prometheus-adapter)

CODE_GENERATORS=(applyconfiguration-gen client-gen conversion-gen deepcopy-gen defaulter-gen
  informer-gen lister-gen register-gen validation-gen)

# The kwok stages that make nodes Ready (and keep them so) and pods Running and
# Ready within seconds; kwok refuses to start without stages.
KWOK_STAGE_DIRS=(node/fast node/heartbeat pod/fast)

log() { printf '%s\n' "$*" >&2; }
PREFETCH_PID=""
die() {
  log "build-tools: error: $*"
  [[ -z "${PREFETCH_PID}" ]] || kill "${PREFETCH_PID}" 2>/dev/null || true
  exit 1
}

usage() {
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
  printf '\nTools: %s (default), %s (on request).\n' "${DEFAULT_TOOLS[*]}" "${EXTRA_TOOLS[*]}"
}

# describe NAME sets, for tool NAME:
#   MOD       module directory under hack/tools
#   MODPATH   the module that MOD requires at VERSION
#   VERSION   from versions.env
#   PKGS      main packages to build
#   BINS      binaries they produce, in the same order
#   LINKS     names of their links in $CACHE/bin (default: BINS)
#   ESTIMATE  rough cold build time on 2 cores
#   LDX       extra -ldflags (-X ...)
#   TAGS      build tags (comma-separated), as the tool's release builds use
#   TESTBIN   1: PKGS[0] is a test package, built with go test -c (one binary)
describe() {
  LDX="" TAGS="" LINKS=() TESTBIN=0
  case "$1" in
  kube-apiserver | kube-controller-manager | kube-scheduler | kubectl | kubelet | kube-proxy)
    MOD=kube MODPATH=k8s.io/kubernetes VERSION="${KUBERNETES_VERSION}"
    PKGS=("k8s.io/kubernetes/cmd/$1") BINS=("$1")
    case "$1" in
    kube-apiserver) ESTIMATE="~4-7 min" ;;
    kube-controller-manager) ESTIMATE="~2-6 min, less after kube-apiserver" ;;
    kubelet) ESTIMATE="~3-4 min, less after kube-apiserver" ;;
    *) ESTIMATE="~1-3 min, less after kube-apiserver" ;;
    esac
    ;;
  k8s-e2e)
    # Kubernetes' end-to-end test binary (go test -c k8s.io/kubernetes/test/e2e),
    # for make test-k8s-e2e; its own module because of its test-only
    # dependencies. Linked as bin/e2e.test.
    MOD=k8se2e MODPATH=k8s.io/kubernetes VERSION="${KUBERNETES_VERSION}"
    PKGS=(k8s.io/kubernetes/test/e2e) BINS=(e2e.test) TESTBIN=1
    ESTIMATE="~10-20 min, about 1 min after the Kubernetes binaries"
    ;;
  etcd)
    MOD=etcd MODPATH=go.etcd.io/etcd/server/v3 VERSION="${ETCD_VERSION}"
    PKGS=(go.etcd.io/etcd/server/v3) BINS=(etcd) ESTIMATE="~1 min"
    ;;
  kwok)
    MOD=kwok MODPATH=sigs.k8s.io/kwok VERSION="${KWOK_VERSION}"
    PKGS=(sigs.k8s.io/kwok/cmd/kwok) BINS=(kwok) ESTIMATE="~3-5 min"
    LDX="-X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v}"
    ;;
  kustomize)
    MOD=kustomize MODPATH=sigs.k8s.io/kustomize/kustomize/v5 VERSION="${KUSTOMIZE_VERSION}"
    PKGS=(sigs.k8s.io/kustomize/kustomize/v5) BINS=(kustomize) ESTIMATE="~1 min"
    ;;
  helm)
    MOD=helm MODPATH=helm.sh/helm/v3 VERSION="${HELM_VERSION}"
    PKGS=(helm.sh/helm/v3/cmd/helm) BINS=(helm) ESTIMATE="~1.5-4 min"
    LDX="-X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}"
    ;;
  thanos)
    MOD=thanos MODPATH=github.com/thanos-io/thanos VERSION="${THANOS_VERSION}"
    PKGS=(github.com/thanos-io/thanos/cmd/thanos) BINS=(thanos) ESTIMATE="~8-15 min, 1.5-2 min after the Kubernetes binaries"
    LDX="-X github.com/prometheus/common/version.Version=${THANOS_VERSION#v}"
    # Thanos' releases are built with these tags (its .promu.yml): without
    # slicelabels, Prometheus' default string labels break Thanos' unsafe
    # label conversions and the sidecar panics on its first gRPC answer.
    TAGS="netgo,slicelabels"
    ;;
  prometheus3)
    # Prometheus 3 (github.com/prometheus/prometheus v0.3XX.Y is 3.XX.Y) for
    # the real node: Debian's 2.42 has no kubernetes_sd_configs. Only the
    # kubernetes service discovery is compiled in (plus file and http, which
    # plugins/minimum.go always registers); no web UI assets (builtinassets
    # needs an npm build), the HTTP API needs none. The binaries keep their
    # names in the tool directory; their links in bin/ get a 3 so that they
    # never shadow Debian's prometheus on a PATH.
    MOD=prometheus MODPATH=github.com/prometheus/prometheus VERSION="${PROMETHEUS3_VERSION}"
    PKGS=(github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool)
    BINS=(prometheus promtool) LINKS=(prometheus3 promtool3)
    ESTIMATE="~1.5-5 min after the Kubernetes binaries"
    TAGS="netgo,remove_all_sd,enable_kubernetes_sd"
    ;;
  mimir)
    # Grafana Mimir, run in monolithic mode (-target=all) by test/storetest.
    # Mimir has no semver tags: VERSION is a pseudo-version of its main branch.
    MOD=mimir MODPATH=github.com/grafana/mimir VERSION="${MIMIR_VERSION}"
    PKGS=(github.com/grafana/mimir/cmd/mimir) BINS=(mimir) ESTIMATE="~10-20 min, 2-4 min after Prometheus 3"
    LDX="-X github.com/prometheus/common/version.Version=${MIMIR_VERSION#v}"
    TAGS="netgo"
    ;;
  victoria-metrics)
    # VictoriaMetrics single-node, pure Go (CGO_ENABLED=0 picks its zstd in
    # Go, as its own "pure" builds do).
    MOD=victoriametrics MODPATH=github.com/VictoriaMetrics/VictoriaMetrics VERSION="${VICTORIAMETRICS_VERSION}"
    PKGS=(github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics) BINS=(victoria-metrics) ESTIMATE="~2-5 min"
    LDX="-X github.com/VictoriaMetrics/VictoriaMetrics/lib/buildinfo.Version=victoria-metrics-${VICTORIAMETRICS_VERSION}"
    TAGS="netgo"
    ;;
  prometheus-adapter)
    # prometheus-adapter's release, on request: make bench-adapter serves it
    # beside ebbflow-adapter (test/adapterbench). Its cmd/adapter is built as
    # the binary prometheus-adapter (its image's name).
    MOD=promadapter MODPATH=sigs.k8s.io/prometheus-adapter VERSION="${PROMETHEUS_ADAPTER_VERSION}"
    PKGS=(sigs.k8s.io/prometheus-adapter/cmd/adapter) BINS=(prometheus-adapter) ESTIMATE="~4-14 min (13.5 at -p 1 beside other builds)"
    ;;
  controller-gen)
    MOD=codegen MODPATH=sigs.k8s.io/controller-tools VERSION="${CONTROLLER_TOOLS_VERSION}"
    PKGS=(sigs.k8s.io/controller-tools/cmd/controller-gen) BINS=(controller-gen) ESTIMATE="~1 min"
    LDX="-X sigs.k8s.io/controller-tools/pkg/version.version=${CONTROLLER_TOOLS_VERSION}"
    ;;
  code-generator)
    MOD=codegen MODPATH=k8s.io/code-generator VERSION="${CODE_GENERATOR_VERSION}"
    PKGS=() BINS=("${CODE_GENERATORS[@]}") ESTIMATE="~1 min, less after controller-gen"
    local g
    for g in "${CODE_GENERATORS[@]}"; do PKGS+=("k8s.io/code-generator/cmd/${g}"); done
    ;;
  *) return 1 ;;
  esac
}

# required_version MOD MODPATH prints the version of MODPATH that
# hack/tools/MOD/go.mod requires, without running the go command.
required_version() {
  awk -v m="$2" '
    $1 == "require" { $1 = ""; $0 = substr($0, 2) }
    $1 == m && $2 ~ /^v/ { print $2; exit }
  ' "${TOOLS_SRC}/$1/go.mod"
}

# go_in MOD ARGS... runs the go command in module MOD, isolated from any
# workspace, with the local toolchain only (fetching a newer one is a download
# of a prebuilt binary, which this project does not do).
go_in() {
  local mod="$1"
  shift
  (cd "${TOOLS_SRC}/${mod}" &&
    GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=readonly -buildvcs=false" \
      nice -n "${NICE}" go "$@")
}

kube_ldflags() {
  local date minor="${KUBERNETES_VERSION#v1.}"
  minor="${minor%%.*}"
  date=$(go_in "${1:-kube}" list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes) ||
    die "cannot read the release time of k8s.io/kubernetes ${KUBERNETES_VERSION}"
  local pkg key val out=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    for key in gitVersion gitMajor gitMinor buildDate; do
      case "${key}" in
      gitVersion) val="${KUBERNETES_VERSION}" ;;
      gitMajor) val=1 ;;
      gitMinor) val="${minor}" ;;
      buildDate) val="${date}" ;;
      esac
      out+=" -X ${pkg}.${key}=${val}"
    done
  done
  printf '%s' "${out# }"
}

# module_dir MOD MODPATH prints the directory of MODPATH's source in the module
# cache, downloading it first: go list -m names a directory only once the
# source is there (on a fresh machine, not before a build needed it).
module_dir() {
  go_in "$1" mod download "$2" && go_in "$1" list -m -f '{{.Dir}}' "$2"
}

# prometheus_ldflags prints the -X flags of github.com/prometheus/common/version
# that Prometheus' release builds set (its .promu.yml): the version from the
# module's VERSION file, the build date from the module's release time.
prometheus_ldflags() {
  local dir date version
  dir=$(module_dir prometheus github.com/prometheus/prometheus) && [[ -s "${dir}/VERSION" ]] ||
    die "prometheus module source (VERSION file) not found in the module cache"
  version=$(<"${dir}/VERSION")
  date=$(go_in prometheus list -m -f '{{.Time.UTC.Format "20060102-15:04:05"}}' github.com/prometheus/prometheus) ||
    die "cannot read the release time of github.com/prometheus/prometheus ${PROMETHEUS3_VERSION}"
  local v=github.com/prometheus/common/version
  printf '%s' "-X ${v}.Version=${version} -X ${v}.Branch=HEAD -X ${v}.Revision=${PROMETHEUS3_VERSION}" \
    " -X ${v}.BuildUser=ebbflow-build-tools -X ${v}.BuildDate=${date}"
}

fmt_secs() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

is_complete() {
  local dir="$1" name="$2" b
  for b in "${BINS[@]}"; do [[ -x "${dir}/${b}" ]] || return 1; done
  if [[ "${name}" == kwok ]]; then [[ -s "${dir}/stages.yaml" ]] || return 1; fi
  [[ -f "${dir}/BUILD-INFO" ]]
}

# copy_kwok_stages DIR copies the stage YAMLs shipped in the kwok module into
# DIR/stages/ and concatenates them into DIR/stages.yaml (one --config).
copy_kwok_stages() {
  local dir="$1" src f n=0
  src=$(module_dir kwok sigs.k8s.io/kwok) && [[ -d "${src}" ]] ||
    die "kwok module source not found in the module cache"
  mkdir -p "${dir}/stages"
  : >"${dir}/stages.yaml"
  for d in "${KWOK_STAGE_DIRS[@]}"; do
    for f in "${src}/kustomize/stage/${d}"/*.yaml; do
      [[ -e "${f}" && "$(basename "${f}")" != kustomization.yaml ]] || continue
      install -m 0644 "${f}" "${dir}/stages/$(basename "${f}")"
      { [[ ${n} -eq 0 ]] || echo '---'; cat "${f}"; } >>"${dir}/stages.yaml"
      n=$((n + 1))
    done
  done
  [[ ${n} -gt 0 ]] || die "no stage YAMLs found under ${src}/kustomize/stage"
  log "  copied ${n} kwok stages into stages/ and stages.yaml"
}

# build NAME... builds the tools NAME... (all of one module and the same
# flags) whose cache entries are incomplete, in one go build: the packages
# they share are compiled once and the build keeps both cores busy to the end
# (links run side by side instead of one after another).
build() {
  local names=("$@") name pinned todo=() pkgs=() bins=() locks=() lock
  for name in "${names[@]}"; do
    describe "${name}" || die "unknown tool '${name}' (try --list)"
    pinned=$(required_version "${MOD}" "${MODPATH}")
    [[ "${pinned}" == "${VERSION}" ]] ||
      die "${name}: hack/tools/versions.env says ${VERSION} but hack/tools/${MOD}/go.mod requires ${MODPATH} ${pinned:-(nothing)}"
    mkdir -p "${CACHE}/bin"
    # One builder per tool and version at a time; a second one waits, then
    # finds it cached (another version of the tool builds meanwhile).
    # Locks are taken in the order of the arguments, which main keeps stable.
    exec {lock}>"${CACHE}/.${name}-${VERSION}.lock"
    flock "${lock}"
    locks+=("${lock}")
    if [[ "${FORCE}" == 0 ]] && is_complete "${CACHE}/${name}-${VERSION}" "${name}"; then
      log "${name} ${VERSION}: cached"
    else
      todo+=("${name}")
      pkgs+=("${PKGS[@]}")
      bins+=("${BINS[@]}")
    fi
  done
  if [[ ${#todo[@]} -gt 0 ]]; then
    describe "${todo[0]}"
    local start tmp ldx="${LDX}" out estimate="${ESTIMATE}"
    [[ ${#todo[@]} -eq 1 ]] || estimate="$(estimate_group "${todo[@]}")"
    log "building ${todo[*]} ${VERSION} (takes ${estimate} on 2 cores)…"
    start=$(date +%s)
    tmp=$(mktemp -d "${CACHE}/.${todo[0]}-${VERSION}.XXXXXX")
    # shellcheck disable=SC2064 # expand tmp now
    trap "rm -rf '${tmp}'" EXIT
    [[ "${MOD}" != kube && "${MOD}" != k8se2e ]] || ldx="$(kube_ldflags "${MOD}")"
    [[ "${MOD}" != prometheus ]] || ldx="$(prometheus_ldflags)"
    if [[ ${#pkgs[@]} -eq 1 ]]; then out="${tmp}/${bins[0]}"; else out="${tmp}/"; fi
    local gocmd=(build)
    [[ "${TESTBIN}" == 0 ]] || gocmd=(test -c -vet=off)
    go_in "${MOD}" "${gocmd[@]}" -p "${BUILD_P}" -trimpath ${TAGS:+-tags "${TAGS}"} -ldflags "-s -w${ldx:+ ${ldx}}" -o "${out}" "${pkgs[@]}" ||
      die "go build of ${todo[*]} ${VERSION} failed (output above)"
    local secs=$(($(date +%s) - start)) b dir
    for name in "${todo[@]}"; do
      describe "${name}"
      dir="${CACHE}/${name}-${VERSION}"
      mkdir -m 0755 "${tmp}/${name}.d"
      for b in "${BINS[@]}"; do mv "${tmp}/${b}" "${tmp}/${name}.d/${b}"; done
      [[ "${name}" != kwok ]] || copy_kwok_stages "${tmp}/${name}.d"
      {
        echo "tool=${name} version=${VERSION} module=hack/tools/${MOD}"
        echo "go=$(go_in "${MOD}" env GOVERSION) command=go ${gocmd[*]} CGO_ENABLED=0 flags=-trimpath${TAGS:+ -tags=${TAGS}} -ldflags=-s -w${ldx:+ ${ldx}}"
        echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ) seconds=${secs} together_with=${todo[*]}"
      } >"${tmp}/${name}.d/BUILD-INFO"
      rm -rf "${dir}"
      mv -T "${tmp}/${name}.d" "${dir}"
    done
    rm -rf "${tmp}"
    trap - EXIT
    log "built ${todo[*]} ${VERSION} in $(fmt_secs "${secs}")"
  fi
  local i l b
  for name in "${names[@]}"; do
    describe "${name}"
    for i in "${!BINS[@]}"; do
      b="${BINS[i]}" l="${LINKS[i]:-${BINS[i]}}"
      ln -sfn "../${name}-${VERSION}/${b}" "${CACHE}/bin/${l}"
      log "  ${CACHE}/bin/${l} -> ${CACHE}/${name}-${VERSION}/${b}"
    done
  done
  for lock in "${locks[@]}"; do exec {lock}>&-; done
}

# estimate_group NAME... is the rough cold build time of Kubernetes tools built
# together (the first one pays for the shared libraries; all six took 7 min
# 07 s on an idle 2-core machine with empty Go caches, 2026-11-27, and 6 min
# 49 s the day before; beside other builds, more than twice that).
estimate_group() {
  printf '~%d-%d min' $((4 + $# / 2)) $((6 + $# / 2))
}

# prefetch NAME... downloads, in the background, the modules that the builds
# of the tools NAME... not yet cached need (go list -deps fetches only
# those), one tool after another; PREFETCH_PID is the background job. A
# build waits on the CPU, a download on the network: on a fresh machine the
# later tools' downloads then cost no wall time.
prefetch() {
  local name todo=()
  for name in "$@"; do
    describe "${name}"
    is_complete "${CACHE}/${name}-${VERSION}" "${name}" || todo+=("${name}")
  done
  [[ ${#todo[@]} -gt 0 ]] || return 0
  (
    for name in "${todo[@]}"; do
      describe "${name}"
      go_in "${MOD}" list -deps ${TAGS:+-tags "${TAGS}"} "${PKGS[@]}" >/dev/null 2>&1 || true
    done
  ) &
  PREFETCH_PID=$!
}

# print_paths NAME prints KEY=VALUE lines for tool NAME (KEY from the name).
print_paths() {
  local name="$1" key dir b
  describe "${name}"
  dir="${CACHE}/${name}-${VERSION}"
  key=$(tr 'a-z-' 'A-Z_' <<<"${name}")
  case "${name}" in
  code-generator)
    echo "CODE_GENERATOR_BIN_DIR=${dir}"
    echo "CODE_GENERATOR_DIR=$(module_dir codegen k8s.io/code-generator)"
    ;;
  prometheus3)
    echo "PROMETHEUS3=${dir}/prometheus"
    echo "PROMTOOL3=${dir}/promtool"
    ;;
  *)
    for b in "${BINS[@]}"; do echo "${key}=${dir}/${b}"; done
    ;;
  esac
  if [[ "${name}" == kwok ]]; then
    echo "KWOK_STAGES=${dir}/stages.yaml"
    echo "KWOK_STAGES_DIR=${dir}/stages"
  fi
}

main() {
  FORCE=0
  local print=0 tools=() t
  while [[ $# -gt 0 ]]; do
    case "$1" in
    -h | --help) usage; return 0 ;;
    --list) printf '%s\n' "${DEFAULT_TOOLS[@]}" "${EXTRA_TOOLS[@]}"; return 0 ;;
    --print-paths) print=1 ;;
    --missing) print=missing ;;
    --force) FORCE=1 ;;
    -*) die "unknown flag $1 (try --help)" ;;
    *) tools+=("$1") ;;
    esac
    shift
  done
  [[ ${#tools[@]} -gt 0 ]] || tools=("${DEFAULT_TOOLS[@]}")
  for t in "${tools[@]}"; do describe "${t}" || die "unknown tool '${t}' (try --list)"; done
  if [[ ${print} == missing ]]; then
    for t in "${tools[@]}"; do
      describe "${t}"
      is_complete "${CACHE}/${t}-${VERSION}" "${t}" || echo "${t}"
    done
    return 0
  fi
  command -v go >/dev/null || die "go is not on PATH"
  command -v flock >/dev/null || die "flock (util-linux) is not on PATH"

  local start
  start=$(date +%s)
  # Tools of one module with the same flags are built together (today the
  # Kubernetes binaries), at the place of the first of them; the others alone.
  local kube=() rest=()
  for t in "${tools[@]}"; do
    describe "${t}"
    if [[ "${MOD}" == kube ]]; then kube+=("${t}"); else rest+=("${t}"); fi
  done
  if [[ ${#kube[@]} -gt 0 ]]; then
    prefetch "${rest[@]}"
    build "${kube[@]}"
  elif [[ ${#rest[@]} -gt 1 ]]; then
    prefetch "${rest[@]:1}"
  fi
  for t in "${rest[@]}"; do build "${t}"; done
  [[ -z "${PREFETCH_PID}" ]] || wait "${PREFETCH_PID}" || true
  log "tools ready in $(fmt_secs $(($(date +%s) - start))) (cache: ${CACHE})"
  if [[ ${print} == 1 ]]; then
    echo "EBBFLOW_TOOLS_CACHE=${CACHE}"
    echo "EBBFLOW_TOOLS_BIN=${CACHE}/bin"
    for t in "${tools[@]}"; do print_paths "${t}"; done
  fi
}

main "$@"
