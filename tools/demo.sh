#!/usr/bin/env bash
# `make demo`: boot the VM with the module and run the main job, nicoff-demo,
# which prints the card's figures next to the host-based ones.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-$PWD/build}
# Figures, so no slab debugging (the tests' default), as for benchmarks.
args=(--module "$PWD/nicoff.ko" --lib-path "$BUILD/lib" --quiet --slub-debug off --timeout 600
      --log "$BUILD/demo.vm.log" --params "${VM_PARAMS:-nics=8}")
[ -n "${VMLINUZ:-}" ] && args+=(--kernel "$VMLINUZ")
for b in "$BUILD"/bin/*; do args+=(--bin "$b"); done
if tools/vm/run.sh "${args[@]}" --cmd "nicoff-demo"; then
	rc=0
else
	rc=$?
fi
# The demo's own output, without the kernel's and the harness's lines.
sed -n '/=== vm: running: nicoff-demo/,/=== vm: exit/p' "$BUILD/demo.vm.log" |
	grep -av '^=== vm:' | grep -av '^\[ *[0-9.]*\]' || true
exit $rc
