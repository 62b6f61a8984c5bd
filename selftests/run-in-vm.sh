#!/usr/bin/env bash
# selftests/run-in-vm.sh - run the nicoff kernel selftests in ONE VM boot.
#
# Boots the VM of tools/vm/run.sh with nicoff.ko loaded, runs every selftest
# binary (one guest command each, --keep-going), lets the guest unload the
# module and check its kernel log, then prints a summary of the TAP lines.
# Exits 0 only if every test passed and the VM run passed (module unloaded,
# clean kernel log).
#
# Usage: selftests/run-in-vm.sh [--only NAME]... [--repeat N] [--timeout S]
#                               [-- run.sh options...]
#   --only NAME   run only this binary (nicoff_ring_test or ring); repeatable
#   --repeat N    run the whole list N times in the same boot (default 1)
#   --timeout S   VM timeout in seconds (default 900)
#   after --      passed to tools/vm/run.sh (e.g. --params "nics=4", --smp 2)
# Environment: BUILD (default <top>/build), MODULE (default <top>/nicoff.ko),
# KERNEL (guest kernel, default: tools/vm/run.sh's choice).
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD:-$top/build}
module=${MODULE:-$top/nicoff.ko}
names=(nicoff_ioctl_test nicoff_memlock_test nicoff_mmap_test nicoff_ring_test
	nicoff_hostile_test nicoff_kill_test nicoff_nowake_test nicoff_sleep_test
	nicoff_fork_test nicoff_ports_test)
only=()
repeat=1
timeout=900
extra=()

while (($#)); do
	case $1 in
	--only) only+=("$2"); shift 2 ;;
	--repeat) repeat=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--) shift; extra=("$@"); break ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "run-in-vm.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || { echo "run-in-vm.sh: bad --repeat" >&2; exit 2; }

if ((${#only[@]})); then
	sel=()
	for o in "${only[@]}"; do
		o=${o#nicoff_}
		o=nicoff_${o%_test}_test
		[[ " ${names[*]} " == *" $o "* ]] || { echo "run-in-vm.sh: no test $o" >&2; exit 2; }
		sel+=("$o")
	done
	names=("${sel[@]}")
fi

[[ -f $module ]] || { echo "run-in-vm.sh: $module missing: make module" >&2; exit 2; }
args=(--module "$module" --keep-going --timeout "$timeout")
if [[ -n ${KERNEL:-} ]]; then
	args+=(--kernel "$KERNEL")
fi
for n in "${names[@]}"; do
	b=$build/selftests/$n
	[[ -x $b ]] || { echo "run-in-vm.sh: $b missing: make selftests" >&2; exit 2; }
	args+=(--bin "$b")
done
# Each binary runs under a hard time limit (the harness has per-test ones)
# and the poll_usecs tunable is put back whatever the test did to it.  Once
# the kernel has oopsed the remaining binaries are not run: every test
# would only wait for its timeout.
for ((r = 1; r <= repeat; r++)); do
	for n in "${names[@]}"; do
		args+=(--cmd "if dmesg | grep -qE 'BUG:|Oops|general protection|Kernel panic'; then \
echo \"=== selftest $n: not run, the kernel oopsed\"; exit 1; fi; \
p=/sys/module/nicoff/parameters/poll_usecs; o=\$(cat \$p); \
timeout -s KILL 600 $n; rc=\$?; echo \$o > \$p; echo \"=== selftest $n: exit \$rc\"; exit \$rc")
	done
done

log=$(mktemp "${TMPDIR:-/tmp}/nicoff-selftests.XXXXXX.log")
trap 'rm -f "$log"' EXIT
have_log=0
for a in "${extra[@]}"; do [[ $a == --log* ]] && have_log=1; done
((have_log)) || args+=(--log "$log")

start=$SECONDS
vm_rc=0
"$top/tools/vm/run.sh" "${args[@]}" "${extra[@]}" || vm_rc=$?
elapsed=$((SECONDS - start))

# Summary from the console log (TAP of the kselftest harness).
if ((!have_log)); then
	clean=$(tr -d '\r' <"$log")
	pass=$(grep -cE '^ok [0-9]+ ' <<<"$clean" || true)
	skip=$(grep -cE '^ok [0-9]+ .*# SKIP' <<<"$clean" || true)
	fail=$(grep -cE '^not ok [0-9]+ ' <<<"$clean" || true)
	echo "=== selftests: $pass ok ($skip skipped), $fail not ok, VM run ${elapsed} s"
	grep -E '^not ok [0-9]+ |^=== selftest .*: exit [1-9]' <<<"$clean" | sed 's/^/  /' || true
	if ((fail)); then
		vm_rc=1
	fi
	if ! grep -q '^=== selftest .*: exit 0' <<<"$clean"; then
		vm_rc=1
	fi
fi
if ((vm_rc)); then
	echo "=== selftests: FAIL"
	exit 1
fi
echo "=== selftests: PASS"
