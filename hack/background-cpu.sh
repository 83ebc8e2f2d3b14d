#!/usr/bin/env bash
# background-cpu.sh CMD [ARG...]: runs CMD with the CPU the rest of the
# machine leaves over. As root, CMD and everything it starts run in a CPU
# cgroup of their own with a low weight (cgroup v1: cpu.shares
# $EBBFLOW_BACKGROUND_SHARES, default 128 against 1024 of every other group;
# cgroup v2: the same ratio as cpu.weight), so while another group wants the
# CPU this one gets at most its share, and all of it when the others are idle.
# `nice` cannot do that: it weighs processes within one group only, and the
# real node's pods are a group of their own (`make test` with TEST_STREAMS=2
# runs its checks this way beside the real node's tests).
#
# The cgroup is /sys/fs/cgroup[/cpu]/ebbflow-background-<this script's pid>.
# It is removed when CMD ends (exit, signal); a process CMD left running is
# moved back to the root group first and named on stderr. Groups of a run
# that was killed (its pid gone, no process left in them) are removed at the
# start. Without root or a cpu controller to use, CMD runs at nice 10 and
# a line says so.
set -uo pipefail

if [ $# -eq 0 ]; then
  echo "usage: $0 CMD [ARG...]" >&2
  exit 2
fi

shares=${EBBFLOW_BACKGROUND_SHARES:-128}
case $shares in
  '' | *[!0-9]*)
    echo "background-cpu: EBBFLOW_BACKGROUND_SHARES=$shares: want a whole number 2..1024" >&2
    exit 2
    ;;
esac
if [ "$shares" -lt 2 ] || [ "$shares" -gt 1024 ]; then
  echo "background-cpu: EBBFLOW_BACKGROUND_SHARES=$shares: want a whole number 2..1024" >&2
  exit 2
fi

# root: the cpu hierarchy's root; file and value: the weight to write.
root="" file="" value=""
if [ "$(id -u)" = 0 ]; then
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    # cgroup v2: only where the cpu controller is already enabled for the
    # root's children (enabling it would change the machine).
    if grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
      root=/sys/fs/cgroup file=cpu.weight value=$(((shares * 100 + 1023) / 1024))
    fi
  elif [ -w /sys/fs/cgroup/cpu/cgroup.procs ]; then
    root=/sys/fs/cgroup/cpu file=cpu.shares value=$shares
  fi
fi
if [ -z "$root" ]; then
  echo "background-cpu: no CPU cgroup to make (not root, or no cpu controller enabled); running at nice 10 instead" >&2
  exec nice -n 10 "$@"
fi

# Leftovers of killed runs: empty groups whose script is gone.
for d in "$root"/ebbflow-background-*; do
  [ -d "$d" ] || continue
  pid=${d##*-}
  if ! kill -0 "$pid" 2>/dev/null && [ -z "$(cat "$d/cgroup.procs" 2>/dev/null)" ]; then
    rmdir "$d" 2>/dev/null || true
  fi
done

cg=$root/ebbflow-background-$$
mkdir "$cg" || exit 1
cleanup() {
  local left
  left=$(cat "$cg/cgroup.procs" 2>/dev/null)
  if [ -n "$left" ]; then
    echo "background-cpu: processes left running by the command, moved out of $cg:" >&2
    for p in $left; do
      echo "  $p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" >&2
      echo "$p" >"$root/cgroup.procs" 2>/dev/null || true
    done
  fi
  rmdir "$cg" 2>/dev/null || echo "background-cpu: could not remove $cg" >&2
}
if ! echo "$value" >"$cg/$file"; then
  rmdir "$cg"
  exit 1
fi

# The child joins the group before it becomes CMD, so nothing CMD starts
# runs outside it. A signal to this script goes on to CMD; the group is
# removed once CMD has ended.
bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' background-cpu "$cg" "$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM HUP
trap 'kill -INT "$child" 2>/dev/null' INT
# wait returns early when a trapped signal arrives: wait again until the
# child has ended; its status is kept once it has.
wait "$child"
while kill -0 "$child" 2>/dev/null; do
  wait "$child"
done
wait "$child"
rc=$?
cleanup
exit "$rc"
