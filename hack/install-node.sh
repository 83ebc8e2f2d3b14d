#!/usr/bin/env bash
# install-node.sh installs what the local cluster's real node runs besides the
# Kubernetes binaries (those come from hack/build-tools.sh): Debian's
# containerd, runc, CNI plugins, iptables and conntrack; and stress, which the
# resource-consumer image of Kubernetes' HPA e2e tests runs (make
# test-k8s-e2e builds that image from source, with Debian's stress as upstream).
#
# Contract:
#   - Idempotent: packages already installed are left alone; apt-get update
#     runs at most once, and only when something is missing.
#   - Non-interactive, CI-safe; no service starts and no existing service is
#     touched (hack/lib/apt.sh: starts denied through policy-rc.d, only the
#     units the install added are disabled). The real node runs its own
#     containerd with its own root, state and socket; a containerd service
#     already on the machine keeps running as it was.
#   - Exits non-zero if a tool is still missing afterwards.
set -euo pipefail

log() { printf 'install-node: %s\n' "$*" >&2; }

PACKAGES=(containerd runc containernetworking-plugins iptables conntrack stress)
# command or file that proves each package is there, in the same order
PROOFS=(/usr/bin/containerd /usr/sbin/runc /usr/lib/cni/bridge /usr/sbin/iptables /usr/sbin/conntrack /usr/bin/stress)

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
	if command -v sudo >/dev/null 2>&1; then SUDO=(sudo -n); else
		log "not root and sudo is unavailable; cannot install"
		exit 1
	fi
fi

missing=()
for i in "${!PACKAGES[@]}"; do
	[[ -e ${PROOFS[$i]} ]] || missing+=("${PACKAGES[$i]}")
done
if [[ ${#missing[@]} -eq 0 ]]; then
	log "already installed: ${PACKAGES[*]}"
	exit 0
fi
command -v apt-get >/dev/null 2>&1 || { log "missing ${missing[*]} and apt-get is unavailable"; exit 1; }

source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"
apt_install hack/install-node.sh "${missing[@]}"

for i in "${!PACKAGES[@]}"; do
	[[ -e ${PROOFS[$i]} ]] || { log "${PACKAGES[$i]} installed but ${PROOFS[$i]} is missing"; exit 1; }
done
containerd --version >&2
