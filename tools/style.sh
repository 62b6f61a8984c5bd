#!/usr/bin/env bash
# Style gates of `make check`: checkpatch --strict on the kernel-style C,
# clang-format on the C++.  Prints one TAP-like line per gate.
set -uo pipefail
cd "$(dirname "$0")/.."
cache=${BUILD:-build}/cache/checkpatch
fail=0

# kmod/compat.h is the one place that tests the kernel version: checkpatch
# may not object there, and nowhere else may do it.
compat=kmod/compat.h
mapfile -t kfiles < <(git ls-files --cached --others --exclude-standard \
	'kmod/*.[ch]' 'firmware-sim/*.[ch]' 'include/*.h' | grep -vx "$compat" | sort -u)
checkpatch() {
	local ignore=SPDX_LICENSE_TAG,FILE_PATH_CHANGES$1
	shift
	"$cache/checkpatch.pl" --strict --no-tree --quiet --show-types --ignore "$ignore" \
		--max-line-length=100 -f "$@"
}
if [ ${#kfiles[@]} -gt 0 ]; then
	log=${BUILD:-build}/checkpatch.log
	if { checkpatch "" "${kfiles[@]}" && checkpatch ,LINUX_VERSION_CODE,CONSTANT_COMPARISON \
		"$compat"; } > "$log" 2>&1 && ! grep -qE '^(ERROR|WARNING|CHECK)' "$log"; then
		echo "ok - checkpatch --strict ($((${#kfiles[@]} + 1)) files)"
	else
		cat "$log"
		echo "not ok - checkpatch --strict"; fail=1
	fi
	if grep -ln 'LINUX_VERSION_CODE\|KERNEL_VERSION(' "${kfiles[@]}"; then
		echo "not ok - kernel version tests outside $compat"; fail=1
	else
		echo "ok - kernel version tests only in $compat"
	fi
fi

mapfile -t cxxfiles < <(git ls-files --cached --others --exclude-standard \
	'*.cpp' '*.hpp' '*.cc' 'libnicoff/*.h' | sort -u)
if [ ${#cxxfiles[@]} -gt 0 ]; then
	if clang-format --dry-run -Werror "${cxxfiles[@]}"; then
		echo "ok - clang-format (${#cxxfiles[@]} files)"
	else
		echo "not ok - clang-format"; fail=1
	fi
fi
exit $fail
