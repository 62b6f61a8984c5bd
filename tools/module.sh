#!/usr/bin/env bash
# tools/module.sh LINE: build nicoff.ko for the newest installed cloud
# kernel of LINE (6.1, 6.12) in $BUILD/module/<kver>/, a copy of the
# module's sources (kbuild builds an external module in its source tree, so
# two kernels cannot share one), and print the path of the .ko.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-$PWD/build}
line=${1:?usage: module.sh LINE}
kver=$(tools/kver.sh "$line")
[ -n "$kver" ] || { echo "module.sh: no $line cloud kernel in /boot: run 'make deps'" >&2; exit 1; }
kdir=/usr/src/linux-headers-$kver
[ -d "$kdir" ] || { echo "module.sh: no headers at $kdir: run 'make deps'" >&2; exit 1; }
out=$BUILD/module/$kver
mkdir -p "$out"
# The sources only (never objects of an in-place build for another kernel),
# and only what changed, so kbuild's own dependency tracking still works.
mkdir -p "$out/kmod" "$out/firmware-sim" "$out/include/uapi"
cp -u Kbuild "$out"/
cp -u kmod/*.[ch] "$out/kmod/"
cp -u firmware-sim/*.[ch] "$out/firmware-sim/"
cp -u include/uapi/*.h "$out/include/uapi/"
make -s -C "$kdir" M="$out" W=1 modules >&2
echo "$out/nicoff.ko"
