# hack/lib/apt.sh: sourced by Debian's installers (hack/install-node.sh,
# install-prometheus.sh, install-qemu-user.sh); they set SUDO (an array,
# empty as root) and log before calling it.
#
# apt_install NAME PKG...: apt-get update, then apt-get install PKG..., with
#   - one installer at a time on this machine: make test's two streams may
#     both install, apt-get fails rather than waits on dpkg's lock, and the
#     policy-rc.d file below is shared. The lock ($TMPDIR/ebbflow-apt.lock,
#     fd 9) is held until the sourcing script exits;
#   - no service started: service starts are denied through policy-rc.d
#     (exit 101). A policy already in place (Debian container images usually
#     ship one) is left as it is, and must deny a start: one that allows it
#     stops the install before apt-get runs. The file made here is removed
#     when the install ends, or when the script exits on a failure. NAME says
#     in the file which installer made it;
#   - no existing service touched: under systemd, only the service units the
#     install added (absent from `systemctl list-unit-files` before it) are
#     disabled, so none starts at boot; a unit that existed before is neither
#     stopped nor disabled, whatever its package.

APT_POLICY=/usr/sbin/policy-rc.d
APT_SYSTEMD=/run/systemd/system
apt_made_policy=false

apt_remove_policy() {
	if [[ $apt_made_policy == true ]]; then
		"${SUDO[@]}" rm -f "$APT_POLICY"
		apt_made_policy=false
	fi
	return 0
}

# apt_policy_denies PKG...: the policy in place answers 101 (forbidden) for a
# start of containerd and of a service no package has.
apt_policy_denies() {
	local id rc
	for id in containerd ebbflow-apt-probe; do
		rc=0
		"$APT_POLICY" "$id" start >/dev/null 2>&1 || rc=$?
		if [[ $rc -ne 101 ]]; then
			log "$APT_POLICY answers $rc for \"$id start\", want 101 (deny): an install would start services; not installing (deny starts in $APT_POLICY or install $* by hand)"
			return 1
		fi
	done
}

apt_systemd() { [[ -d $APT_SYSTEMD ]] && command -v systemctl >/dev/null 2>&1; }

# apt_service_units: the names of the service unit files systemd knows, one a
# line, sorted.
apt_service_units() {
	apt_systemd || return 0
	systemctl list-unit-files --type=service --no-legend --no-pager 2>/dev/null | awk '{print $1}' | sort -u
}

apt_install() {
	local name=$1
	shift
	local lock="${TMPDIR:-/tmp}/ebbflow-apt.lock"
	: >>"$lock" 2>/dev/null || true
	exec 9<"$lock"
	flock 9

	trap apt_remove_policy EXIT
	if [[ -e $APT_POLICY ]]; then
		apt_policy_denies "$@" || return 1
	else
		printf '#!/bin/sh\n# added by %s\nexit 101\n' "$name" | "${SUDO[@]}" tee "$APT_POLICY" >/dev/null
		"${SUDO[@]}" chmod 0755 "$APT_POLICY"
		apt_made_policy=true
	fi

	local before unit
	before=$(apt_service_units)
	local opts=(-y -q --no-install-recommends -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
	log "running apt-get update"
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null >&2
	log "installing $*"
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install "${opts[@]}" "$@" </dev/null >&2
	apt_remove_policy

	for unit in $(comm -13 <(printf '%s\n' "$before") <(apt_service_units) | sed '/^$/d'); do
		log "disabling $unit, added by the install (it does not start at boot)"
		"${SUDO[@]}" systemctl disable --now "$unit" >&2
	done
}
