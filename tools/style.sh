#!/usr/bin/env bash
# Style gates of `make check`: checkpatch --strict on the kernel-style C,
# clang-format on the C++.  Prints one TAP-like line per gate.
set -uo pipefail
cd "$(dirname "$0")/.."
cache=${BUILD:-build}/cache/checkpatch
fail=0

mapfile -t kfiles < <(git ls-files --cached --others --exclude-standard \
	'kmod/*.[ch]' 'firmware-sim/*.[ch]' 'include/*.h' | sort -u)
if [ ${#kfiles[@]} -gt 0 ]; then
	if "$cache/checkpatch.pl" --strict --no-tree --quiet --show-types \
		--ignore SPDX_LICENSE_TAG,FILE_PATH_CHANGES --max-line-length=100 \
		-f "${kfiles[@]}" > "${BUILD:-build}/checkpatch.log" 2>&1 \
		&& ! grep -qE '^(ERROR|WARNING|CHECK)' "${BUILD:-build}/checkpatch.log"; then
		echo "ok - checkpatch --strict (${#kfiles[@]} files)"
	else
		cat "${BUILD:-build}/checkpatch.log"
		echo "not ok - checkpatch --strict"; fail=1
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
