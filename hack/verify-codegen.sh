#!/usr/bin/env bash
# Fails when the generated code or CRD is out of date with the API types:
# runs hack/update-codegen.sh on a temporary copy of the working tree (tracked
# and untracked, not ignored files) and compares what it generates with the
# tree. The working tree is never written to.
#
#   hack/verify-codegen.sh
#
# Exit status 0 when up to date, 1 (with a diff) on drift. Environment as for
# hack/update-codegen.sh; the tool cache of this tree is reused.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "${ROOT}"

# What hack/update-codegen.sh writes.
GENERATED=(autoscaler/apis autoscaler/generated manifests/autoscaler/crd charts/ebbflow/files/crds)

tmp=$(mktemp -d)
trap 'rm -rf "${tmp}"' EXIT
git ls-files -z --cached --others --exclude-standard |
  xargs -0 -I{} sh -c 'test -e "$1" && printf "%s\0" "$1" || true' _ {} |
  tar --null -T - -cf - | tar -C "${tmp}" -xf -

EBBFLOW_TOOLS_CACHE="${EBBFLOW_TOOLS_CACHE:-${ROOT}/.cache/tools}" "${tmp}/hack/update-codegen.sh" >/dev/null 2>"${tmp}.log" || {
  cat "${tmp}.log" >&2
  rm -f "${tmp}.log"
  echo "verify-codegen: hack/update-codegen.sh failed" >&2
  exit 1
}
rm -f "${tmp}.log"

drift=0
for d in "${GENERATED[@]}"; do
  diff -ruN "${ROOT}/${d}" "${tmp}/${d}" || drift=1
done
if [[ ${drift} != 0 ]]; then
  echo "verify-codegen: generated files are out of date; run hack/update-codegen.sh" >&2
  exit 1
fi
echo "verify-codegen: up to date" >&2
