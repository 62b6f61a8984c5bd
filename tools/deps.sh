#!/usr/bin/env bash
# Install, only when missing, the Debian packages nicoff needs to build,
# test and run in the VM.  Idempotent; runs `apt-get update` only when it
# has something to install (a fresh machine has no package lists).
#
# Two guest kernels are supported, Debian 12's 6.1 and the 6.12 of
# bookworm-backports (Debian 13's line), and the QEMU of bookworm-backports
# runs both (bookworm's QEMU 7.2 crashes a 2-vCPU 6.12 guest under TCG).
set -euo pipefail

pkgs=(
	# the VM's 6.1 kernel and the headers the module is built against
	linux-image-cloud-amd64 linux-headers-cloud-amd64
	# kselftest harness headers and checkpatch.pl, taken at build time
	linux-source-6.1 linux-libc-dev
	# the VM (QEMU itself comes from backports, below)
	busybox-static cpio
	# toolchain and style
	build-essential g++ make pkg-config kmod clang-format
	# libraries
	libnl-3-dev libnl-genl-3-dev liburcu-dev libcmocka-dev
	# JSON: nicoffctl -j and nicoff-bench --json (header-only), the nicoffctl selftest
	nlohmann-json3-dev libjson-c-dev
	# the simulator's CRC-32C
	libisal-dev
	# plots and result tables; the report of `make reproduce` (tools/report)
	gnuplot-nox python3 python3-matplotlib python3-numpy
	# man pages: lint and whatis parsing in `make check`, `man -l`
	mandoc man-db
	# MPI: MPICH's mpiexec (hydra) in the VM (tools/vm/run.sh --mpi), mpicc.mpich
	# for the MPI tests (libnicoff/mpi/tests) and the PMPI library
	mpich libmpich-dev
	# Open MPI beside it (mpirun runs in the VM: tools/vm/README.md); installing it
	# makes it the default of the mpicc and mpirun alternatives, so the build
	# names each flavour's wrapper (mpicc.mpich, mpicc.openmpi)
	openmpi-bin libopenmpi-dev
	# ARMCI and Global Arrays (static, MPICH builds) for the ARMCI tests and the
	# armci benchmark; GA's link takes ScaLAPACK, LAPACK, BLAS and gfortran's runtime
	libarmci-mpi-dev libglobalarrays-dev libscalapack-mpich-dev liblapack-dev libblas-dev gfortran
)
bpo=bookworm-backports
bpo_list=/etc/apt/sources.list.d/nicoff-$bpo.sources

sudo=
[ "$(id -u)" -eq 0 ] || sudo=sudo
updated=

installed() {
	[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]
}

apt_update() {
	[ -n "$updated" ] || $sudo apt-get update
	updated=1
}

apt_install() {
	apt_update
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "$@"
}

# bookworm-backports from the mirror the system already uses for bookworm.
add_backports() {
	local uri
	if apt-cache policy 2>/dev/null | grep -q "$bpo/main"; then
		return
	fi
	uri=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | sed -n 's/^URIs: *\([^ ]*\/debian\)$/\1/p' |
		head -n1)
	[ -n "$uri" ] || uri=$(sed -n 's/^deb \(\[[^]]*\] \)\{0,1\}\([^ ]*\/debian\) bookworm .*/\2/p' \
		/etc/apt/sources.list 2>/dev/null | head -n1)
	[ -n "$uri" ] || uri=http://deb.debian.org/debian
	echo "deps: adding $bpo ($uri) in $bpo_list"
	printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n' \
		"$uri" "$bpo" /usr/share/keyrings/debian-archive-keyring.gpg | $sudo tee "$bpo_list" >/dev/null
	updated=
}

missing=()
for p in "${pkgs[@]}"; do
	installed "$p" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}"
	apt_install "${missing[@]}"
fi

# The newest image of one kernel line (6.1 or 6.12) in /boot.
kver_of() {
	ls -1v /boot | sed -n "s/^vmlinuz-\\(${1//./\\.}\\.[^-+]*[-+].*-cloud-amd64\\)\$/\\1/p" | tail -n1
}

# From backports: QEMU (8 or later) and the 6.12 cloud kernel with its headers.
qemu_ver=$(dpkg-query -W -f='${Version}' qemu-system-x86 2>/dev/null || true)
if [ -z "$qemu_ver" ] || dpkg --compare-versions "$qemu_ver" lt 1:8 || [ -z "$(kver_of 6.12)" ]; then
	add_backports
	apt_update
	# The versioned packages, so the 6.1 metapackages stay as they are.
	k612=$(apt-cache depends -t $bpo linux-image-cloud-amd64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-6\.12\.[^ ]*-cloud-amd64\)$/\1/p' | head -n1)
	[ -n "$k612" ] || { echo "deps: no 6.12 cloud kernel in $bpo" >&2; exit 1; }
	echo "deps: installing qemu-system-x86, $k612 and its headers from $bpo"
	apt_install -t $bpo qemu-system-x86 "$k612" "${k612/linux-image-/linux-headers-}"
fi

# The module is built against the headers of each image the VM boots.
for line in 6.1 6.12; do
	kver=$(kver_of $line)
	if [ -z "$kver" ]; then
		echo "deps: no $line cloud kernel image in /boot after install" >&2
		exit 1
	fi
	if [ ! -d "/usr/src/linux-headers-$kver" ]; then
		echo "deps: installing headers for $kver"
		apt_install "linux-headers-$kver"
	fi
	echo "deps: ok (kernel $kver)"
done
