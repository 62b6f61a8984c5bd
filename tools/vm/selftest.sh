#!/usr/bin/env bash
# tools/vm/selftest.sh - does the VM harness (tools/vm/run.sh) see what must
# fail a run?  TAP on stdout; `make check` runs it (tools/check.sh).
#
# 1. One console log per kind of kernel failure (a warning, an oops,
#    slub_debug's reports, a hung task, a soft lockup, RCU stalls, ...),
#    each with ordinary boot lines around it: `run.sh --scan-log` must find
#    it with the host's scan and with the guest's (busybox) scan.
# 2. Clean logs (a boot with the expected taint lines, the guest's echo of
#    a command quoting patterns, NUL bytes) must pass.
# 3. One boot whose guest writes a slub report line into /dev/kmsg: run.sh
#    must fail, from the guest's dmesg check and from the host's scan.
# 4. One clean boot writing an ordinary line into /dev/kmsg: run.sh must
#    pass, and the kernel command line must carry slub_debug=FZPU.
#
# Usage: tools/vm/selftest.sh [--no-boot]   (--no-boot: parts 1 and 2 only)
# Environment: KERNEL or VMLINUZ (guest kernel, default: run.sh's choice).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
run=$here/run.sh
boot=1
case ${1:-} in
--no-boot) boot=0 ;;
"") ;;
*)
	echo "usage: $0 [--no-boot]" >&2
	exit 2
	;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/nicoff-vm-selftest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

n=0
failed=0
# TAP comments: run.sh's output, indented.
indent() { sed 's/^/# /'; }
ok() {
	n=$((n + 1))
	echo "ok $n - $*"
}
not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $*"
}

# A console log: some ordinary boot lines, then $1 (may hold several lines).
boot_log() {
	printf '%s\n' \
		'[    0.000000] Linux version 6.1.0-56-cloud-amd64 (debian-kernel@lists.debian.org)' \
		'[    0.065052] Kernel command line: console=ttyS0 panic=-1 slub_debug=FZPU' \
		'[    0.094694] SLUB: HWalign=64, Order=0-3, MinObjects=0, CPUs=2, Nodes=1' \
		'=== vm: init started (6.1.0-56-cloud-amd64, 2 CPUs)' \
		'[    3.100000] nicoff: loading out-of-tree module taints kernel.' \
		'[    3.100100] nicoff: module verification failed: signature and/or required key missing - tainting kernel' \
		'=== vm: running: nicoff-selftest nicoff_fuzz_test' \
		'ok 1 fuzz.storm'
	printf '%s\n' "$1"
	printf '%s\n' '=== vm: exit 0' '=== vm: rmmod nicoff'
}

# scan_case NAME WANT LOG: run.sh --scan-log on LOG must exit WANT.
scan_case() {
	local name=$1 want=$2 f out rc
	f=$tmp/log.$((n + 1))
	printf '%s' "$3" >"$f"
	out=$("$run" --scan-log "$f" 2>&1)
	rc=$?
	if ((rc == want)); then
		ok "scan: $name (exit $rc)"
	else
		not_ok "scan: $name: exit $rc, want $want"
	fi
	indent <<<"$out"
}

echo "TAP version 13"

# --- 1. every kind of failure, in its own log -------------------------------
while IFS='|' read -r name line; do
	[[ -n $name ]] || continue
	scan_case "$name" 1 "$(boot_log "$line")"
done <<'EOF'
warning|[   41.000001] WARNING: CPU: 1 PID: 77 at kmod/port.c:211 nicoff_port_service+0x1a/0x2b0 [nicoff]
bug|[   41.000002] BUG: unable to handle page fault for address: ffffc90000a3f000
oops|[   41.000003] Oops: 0002 [#1] PREEMPT SMP PTI
call trace|[   41.000004]  Call Trace:
general protection fault|[   41.000005] general protection fault, probably for non-canonical address 0x6b6b6b6b6b6b6b6b: 0000 [#1] SMP PTI
kernel BUG|[   41.000006] kernel BUG at mm/usercopy.c:101!
UBSAN|[   41.000007] UBSAN: array-index-out-of-bounds in kmod/port.c:40:12
refcount|[   41.000008] refcount_t: addition on 0; use-after-free.
panic|[   41.000009] Kernel panic - not syncing: Fatal exception
slub poison (kmalloc)|[   41.000010] BUG kmalloc-96 (Tainted: G           O      ): Poison overwritten
slub redzone (other cache)|[   41.000011] BUG nicoff_port (Not tainted): Right Redzone overwritten
slub double free|[   41.000012] BUG kmalloc-64 (Tainted: G    B      O      ): Object already free
slub free pointer|[   41.000013] BUG kmalloc-128 (Not tainted): Freepointer corrupt
slub poison line alone|[   41.000014] Poison overwritten
hung task|[  243.000015] INFO: task nicoff_fuzz_test:312 blocked for more than 120 seconds.
hung task hint|[  243.000016] "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.
soft lockup|[   70.000017] watchdog: BUG: soft lockup - CPU#1 stuck for 26s! [nicoff-card0:95]
soft lockup alone|[   70.000018] soft lockup - CPU#0 stuck for 23s!
hard lockup|[   70.000019] NMI watchdog: Watchdog detected hard LOCKUP on cpu 1
rcu self-detected stall|[   64.000020] rcu: INFO: rcu_sched self-detected stall on CPU
rcu detected stalls|[   64.000021] rcu: INFO: rcu_sched detected stalls on CPUs/tasks:
rcu preempt stalls|[   64.000022] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:
rcu expedited stalls|[   64.000023] rcu: INFO: rcu_sched detected expedited stalls on CPUs/tasks: { 1-... } 21 jiffies s: 85 root: 0x2/.
RCU Stall|[   64.000024] RCU Stall detected on CPU 1
EOF

# Failures after control and NUL bytes (GNU grep would call the log binary).
scan_case "failure after a control byte" 1 "$(boot_log "$(printf 'garbage \001 here')")
$(printf '[   41.5] BUG kmalloc-64 (Not tainted): Poison overwritten')"
# A boot log with NUL bytes and CRs, then the line $3 if given: run.sh
# --scan-log must exit $2.
nul_case() {
	local f=$tmp/nul-$2.log out rc
	{
		boot_log 'x'
		printf 'serial noise \000\000 then\r\n'
		[[ -z ${3:-} ]] || printf '%s\r\n' "$3"
	} >"$f"
	out=$("$run" --scan-log "$f" 2>&1)
	rc=$?
	if ((rc == $2)); then ok "scan: $1 (exit $2)"; else not_ok "scan: $1: exit $rc, want $2"; fi
	indent <<<"$out"
}
nul_case "failure after NUL bytes and CRs" 1 \
	'[   41.6] rcu: INFO: rcu_sched self-detected stall on CPU'

# --- 2. clean logs ---------------------------------------------------------
scan_case "clean boot with the expected taint lines" 0 "$(boot_log '[   12.0] nicoff: 8 cards, 1 card thread')"
scan_case "echo of a command quoting patterns" 0 "$(boot_log "=== vm: running: dmesg | grep -E 'WARNING:|Poison overwritten|RCU Stall|BUG kmalloc'")"
scan_case "test names near the patterns" 0 "$(boot_log 'ok 3 kill.stalled_full_rings
ok 4 barrier.detected_stalls_none
# BUG_ON free: 0 of 0')"
nul_case "clean log with NUL bytes and CRs" 0

# --- 3. and 4. the kmsg route, end to end ------------------------------------
kernel=${KERNEL:-${VMLINUZ:-}}
kargs=()
[[ -n $kernel ]] && kargs=(--kernel "$kernel")
if ((boot)); then
	# The pattern is put together in the guest, so that only the kernel
	# log can hold it whole.
	out=$("$run" "${kargs[@]}" --quiet --timeout 120 \
		--cmd "printf '<3>BUG kmalloc-64 (Tainted: G    B      O      ): %s overwritten\\n' Poison >/dev/kmsg" \
		2>&1)
	rc=$?
	if ((rc == 1)) && grep -q 'guest: FAIL kernel log: BUG kmalloc-64' <<<"$out" &&
		grep -q 'console log matches a failure pattern: .*BUG kmalloc-64 .*Poison overwritten' <<<"$out"; then
		ok "boot: a slub report written to /dev/kmsg fails the run (guest and host)"
	else
		not_ok "boot: a slub report written to /dev/kmsg: exit $rc, want 1 from both scans"
		tail -n 20 <<<"$out" | indent
	fi
	grep -E '^  |FAIL' <<<"$out" | indent

	log=$tmp/clean-boot.log
	out=$("$run" "${kargs[@]}" --quiet --timeout 120 --log "$log" \
		--cmd "printf '<3>nicoff harness self-test: %s line\\n' clean >/dev/kmsg" 2>&1)
	rc=$?
	if ((rc == 0)) && grep -q 'nicoff harness self-test: clean line' "$log" &&
		grep -q 'Kernel command line:.* slub_debug=FZPU' "$log"; then
		ok "boot: a clean run passes, slub_debug=FZPU on the kernel command line"
	else
		not_ok "boot: clean run: exit $rc, want 0 (and the line and slub_debug=FZPU in the log)"
		tail -n 20 <<<"$out" | indent
	fi
	grep -E '=== vm: (PASS|FAIL)' <<<"$out" | indent
else
	n=$((n + 1))
	echo "ok $n - boot: slub report via /dev/kmsg # SKIP --no-boot"
	n=$((n + 1))
	echo "ok $n - boot: clean run # SKIP --no-boot"
fi

echo "1..$n"
((failed == 0))
