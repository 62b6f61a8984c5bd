#!/usr/bin/env bash
# Take what the build needs from Debian's linux-source-6.1 tarball into a
# git-ignored cache: the kselftest harness headers, the kselftest runner
# (run_kselftest.sh and kselftest/, for `make -C selftests run_tests` and
# `install`) and checkpatch.pl with its data files.  Nothing of it is ever copied into the repository.
set -euo pipefail
tarball=${1:?usage: extract-source.sh LINUX_SOURCE_TAR CACHE_DIR}
cache=${2:?usage: extract-source.sh LINUX_SOURCE_TAR CACHE_DIR}
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/extract.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# One pass over the tarball; strip its top directory, whatever its name.
tar -xJf "$tarball" -C "$tmp" --strip-components=1 --wildcards \
	'*/tools/testing/selftests/kselftest_harness.h' \
	'*/tools/testing/selftests/kselftest.h' \
	'*/tools/testing/selftests/run_kselftest.sh' \
	'*/tools/testing/selftests/kselftest/runner.sh' \
	'*/tools/testing/selftests/kselftest/prefix.pl' \
	'*/tools/testing/selftests/kselftest/module.sh' \
	'*/scripts/checkpatch.pl' \
	'*/scripts/spelling.txt' \
	'*/scripts/const_structs.checkpatch'
top=.
mkdir -p "$cache/kselftest/runner/kselftest" "$cache/checkpatch"
ksft=$tmp/$top/tools/testing/selftests
cp "$ksft/kselftest_harness.h" "$ksft/kselftest.h" "$cache/kselftest/"
cp "$ksft/run_kselftest.sh" "$cache/kselftest/runner/"
cp "$ksft/kselftest/runner.sh" "$ksft/kselftest/prefix.pl" "$ksft/kselftest/module.sh" \
   "$cache/kselftest/runner/kselftest/"
cp "$tmp/$top/scripts/checkpatch.pl" "$tmp/$top/scripts/spelling.txt" \
   "$tmp/$top/scripts/const_structs.checkpatch" "$cache/checkpatch/"
chmod +x "$cache/checkpatch/checkpatch.pl"
