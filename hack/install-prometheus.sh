#!/usr/bin/env bash
# install-prometheus.sh installs the Prometheus server used by the integration
# tests, the local cluster and the demo.
#
# Contract:
#   - Idempotent: if a prometheus binary is already on PATH (or at
#     /usr/bin/prometheus) nothing is installed; the version is printed.
#   - Otherwise installs Debian's "prometheus" package with apt-get, running
#     "apt-get update" at most once, non-interactively (no stdin needed, CI-safe).
#   - Starts no service and touches no existing one (hack/lib/apt.sh: starts
#     denied through policy-rc.d, only the units the install added are
#     disabled); a Prometheus service already on the machine is left as it is.
#   - Exits non-zero if Prometheus could not be installed or does not run.
set -euo pipefail

log() { printf 'install-prometheus: %s\n' "$*" >&2; }

find_prometheus() {
	if command -v prometheus >/dev/null 2>&1; then
		command -v prometheus
	elif [[ -x /usr/bin/prometheus ]]; then
		echo /usr/bin/prometheus
	else
		return 1
	fi
}

print_version() {
	local out
	out=$("$1" --version 2>&1)
	# Only the first line ("prometheus, version X ..."); no pipe into head, so
	# pipefail cannot trip on SIGPIPE.
	printf '%s\n' "${out%%$'\n'*}"
}

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=(sudo -n)
	else
		log "not root and sudo is unavailable; cannot install"
		exit 1
	fi
fi

if bin=$(find_prometheus); then
	log "already installed: $bin"
	print_version "$bin"
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	log "prometheus is missing and apt-get is unavailable; install Prometheus 2.x manually"
	exit 1
fi

source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"
apt_install hack/install-prometheus.sh prometheus

if ! bin=$(find_prometheus); then
	log "prometheus package installed but no prometheus binary found"
	exit 1
fi
print_version "$bin"
