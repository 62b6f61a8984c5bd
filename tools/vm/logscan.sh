# shellcheck shell=sh
# tools/vm/logscan.sh - the kernel-log scan of the VM harness, sourced by
# tools/vm/run.sh (bash, on the host, over the whole console log) and by the
# guest's /init (busybox sh, over dmesg), so that both look for failures
# the same way.  `run.sh --scan-log FILE` runs it both ways on a file.
#
# log_hits FILE: print the first (at most 3) lines of FILE that match
# $fail_regex (extended regex), leaving out lines that match $ignore_regex
# and the guest's echo of its commands ("=== vm: running: ..."), which may
# quote a pattern.  Prints nothing for a clean log; always returns 0.
#
# NUL bytes and carriage returns are dropped first: GNU grep would take a
# log with a NUL for a binary file and print "Binary file matches" instead
# of the lines, hiding them from the second grep.
# shellcheck disable=SC2154 # fail_regex and ignore_regex: set by the caller
log_hits() {
	tr -d '\000\r' <"$1" | LC_ALL=C grep -v -E "$ignore_regex|^=== vm: running: " |
		LC_ALL=C grep -E -m 3 "$fail_regex" || true
}
