#!/usr/bin/env bash
# Prints the ARMCI symbols Debian's Global Arrays (libga-mpich.a) needs from
# ARMCI and libarmci-nicoff does not define; exit 1 if there is any, 0 if
# there is none.  The symbols GA needs: those its objects leave undefined,
# whose names contain "armci" (any case), less those GA defines itself
# (its TCGMSG layer, armci_tcgmsg_*).
#   tools/armci-symbols.sh [--list] [LIB] [GA_ARCHIVE]
# --list prints every needed symbol instead, one a line.  Exit 77 (skip)
# when GA or the library is not there.
set -euo pipefail
cd "$(dirname "$0")/.."
list=0
if [ "${1:-}" = --list ]; then
	list=1
	shift
fi
lib=${1:-${BUILD:-$PWD/build}/lib/libarmci-nicoff.so}
ga=${2:-/usr/lib/x86_64-linux-gnu/libga-mpich.a}
for f in "$lib" "$ga"; do
	if [ ! -e "$f" ]; then
		echo "armci-symbols: $f is missing; nothing to check" >&2
		exit 77
	fi
done
needed=$(comm -23 \
	<(nm -u "$ga" 2> /dev/null | awk 'NF == 2 {print $2}' | grep -i armci | sort -u) \
	<(nm -g --defined-only "$ga" 2> /dev/null | awk 'NF == 3 {print $3}' | sort -u))
if [ "$list" = 1 ]; then
	echo "$needed"
	exit 0
fi
missing=$(comm -23 <(echo "$needed") \
	<(nm -D --defined-only "$lib" | awk '{print $NF}' | sort -u))
if [ -n "$missing" ]; then
	echo "$missing"
	echo "armci-symbols: $(echo "$missing" | wc -l) of $(echo "$needed" | wc -l) symbols GA needs are missing from $lib" >&2
	exit 1
fi
echo "armci-symbols: all $(echo "$needed" | wc -l) symbols GA needs are in $lib" >&2
