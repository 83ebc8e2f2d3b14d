# hack/lib/apt.sh: sourced by Debian's installers (hack/install-node.sh,
# install-prometheus.sh, install-qemu-user.sh); they set SUDO (an array,
# empty as root) and log before calling it.
#
# apt_install NAME PKG...: apt-get update, then apt-get install PKG..., with
#   - one installer at a time on this machine: make test's two streams may
#     both install, apt-get fails rather than waits on dpkg's lock, and the
#     policy-rc.d file below is shared. The lock ($TMPDIR/ebbflow-apt.lock,
#     fd 9) is held until the sourcing script exits;
#   - service starts denied (policy-rc.d exits 101) unless a policy is already
#     in place (Debian container images usually ship one); the file made here
#     is removed when the install ends, or when the script exits on a failure.
#     NAME says in the file which installer made it.

APT_POLICY=/usr/sbin/policy-rc.d
apt_made_policy=false

apt_remove_policy() {
	if [[ $apt_made_policy == true ]]; then
		"${SUDO[@]}" rm -f "$APT_POLICY"
		apt_made_policy=false
	fi
	return 0
}

apt_install() {
	local name=$1
	shift
	local lock="${TMPDIR:-/tmp}/ebbflow-apt.lock"
	: >>"$lock" 2>/dev/null || true
	exec 9<"$lock"
	flock 9

	trap apt_remove_policy EXIT
	if [[ ! -e $APT_POLICY ]]; then
		printf '#!/bin/sh\n# added by %s\nexit 101\n' "$name" | "${SUDO[@]}" tee "$APT_POLICY" >/dev/null
		"${SUDO[@]}" chmod 0755 "$APT_POLICY"
		apt_made_policy=true
	fi

	local opts=(-y -q --no-install-recommends -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
	log "running apt-get update"
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null >&2
	log "installing $*"
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install "${opts[@]}" "$@" </dev/null >&2
	apt_remove_policy
}
