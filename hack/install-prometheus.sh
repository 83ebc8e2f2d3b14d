#!/usr/bin/env bash
# install-prometheus.sh installs the Prometheus server used by the integration
# tests, the local cluster and the demo.
#
# Contract:
#   - Idempotent: if a prometheus binary is already on PATH (or at
#     /usr/bin/prometheus) nothing is installed; the version is printed.
#   - Otherwise installs Debian's "prometheus" package with apt-get, running
#     "apt-get update" at most once, non-interactively (no stdin needed, CI-safe).
#   - Leaves no Prometheus service running: service starts are denied through
#     policy-rc.d for the duration of the install, and a service that started
#     anyway (systemd or a sysvinit pidfile) is stopped and disabled.
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

# Make sure the packaged service is not left running.
if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null 2>&1; then
	"${SUDO[@]}" systemctl disable --now prometheus.service >/dev/null 2>&1 || true
fi
PIDFILE=/run/prometheus/prometheus.pid
if [[ -f $PIDFILE ]]; then
	pid=$(cat "$PIDFILE" 2>/dev/null || true)
	if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
		log "stopping the packaged prometheus service (pid $pid)"
		"${SUDO[@]}" kill -TERM "$pid" || true
		for _ in $(seq 1 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
	fi
fi

if ! bin=$(find_prometheus); then
	log "prometheus package installed but no prometheus binary found"
	exit 1
fi
print_version "$bin"
