#!/usr/bin/env bash
# install-qemu-user.sh installs Debian's qemu-user-static, which test/imagetest
# uses to run the images' binaries for the other architecture (arm64 on an
# amd64 machine) by invoking the emulator explicitly
# (`qemu-aarch64-static ./binary --help`): no binfmt_misc registration is
# needed, and none is left behind.
#
# Contract:
#   - Idempotent: nothing is done when the emulators are there; apt-get update
#     runs only when something is missing. --no-install-recommends keeps
#     binfmt-support out.
#   - Leaves binfmt_misc as it found it: the package's maintainer scripts may
#     register its interpreters (through systemd-binfmt or update-binfmts where
#     those run); every entry under /proc/sys/fs/binfmt_misc that was not
#     there before the install is removed afterwards (echo -1 > ENTRY). Where
#     binfmt_misc is not mounted nothing can be registered, and nothing is
#     mounted.
#   - Non-interactive, CI-safe; exits non-zero if an emulator is still missing.
set -euo pipefail

log() { printf 'install-qemu-user: %s\n' "$*" >&2; }

PROOFS=(/usr/bin/qemu-aarch64-static /usr/bin/qemu-x86_64-static)
BINFMT=/proc/sys/fs/binfmt_misc

missing=false
for p in "${PROOFS[@]}"; do [[ -x $p ]] || missing=true; done
if [[ $missing == false ]]; then
	log "already installed: qemu-user-static"
	exit 0
fi

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
	if command -v sudo >/dev/null 2>&1; then SUDO=(sudo -n); else
		log "not root and sudo is unavailable; cannot install"
		exit 1
	fi
fi
command -v apt-get >/dev/null 2>&1 || { log "qemu-user-static is missing and apt-get is unavailable"; exit 1; }

source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"

# binfmt_misc entries (all but its control files) before the install.
entries() { [[ -e $BINFMT/register ]] || return 0; find "$BINFMT" -mindepth 1 -maxdepth 1 ! -name register ! -name status -printf '%f\n' | sort; }
before=$(entries)

apt_install hack/install-qemu-user.sh qemu-user-static

after=$(entries)
added=$(comm -13 <(printf '%s\n' "$before") <(printf '%s\n' "$after") | sed '/^$/d')
for e in $added; do
	log "removing binfmt_misc entry $e registered by the install"
	echo -1 | "${SUDO[@]}" tee "$BINFMT/$e" >/dev/null
done
if [[ $(entries) != "$before" ]]; then
	log "binfmt_misc differs from before the install"
	exit 1
fi

for p in "${PROOFS[@]}"; do
	[[ -x $p ]] || { log "qemu-user-static installed but $p is missing"; exit 1; }
done
qemu-aarch64-static --version | head -1 >&2
