#!/usr/bin/env bash
# Install, only when missing, the Debian packages nicoff needs to build,
# test and run in the VM.  Idempotent; runs `apt-get update` only when it
# has something to install (a fresh machine has no package lists).
set -euo pipefail

pkgs=(
	# the VM's kernel and the headers the module is built against
	linux-image-cloud-amd64 linux-headers-cloud-amd64
	# kselftest harness headers and checkpatch.pl, taken at build time
	linux-source-6.1 linux-libc-dev
	# the VM
	qemu-system-x86 busybox-static cpio
	# toolchain and style
	build-essential g++ make pkg-config kmod clang-format
	# libraries
	libnl-3-dev libnl-genl-3-dev liburcu-dev libcmocka-dev zlib1g-dev
	# plots and result tables
	gnuplot-nox python3
)

missing=()
for p in "${pkgs[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$status" = "install ok installed" ] || missing+=("$p")
done

apt_install() {
	local sudo=
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo apt-get update
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "$@"
}

if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}"
	apt_install "${missing[@]}"
fi

# The module must be built against the headers of the image the VM boots:
# find the newest installed cloud image and make sure its headers exist.
kver=$(ls -1v /boot | sed -n 's/^vmlinuz-\(.*-cloud-amd64\)$/\1/p' | tail -n1)
if [ -z "$kver" ]; then
	echo "deps: no cloud kernel image in /boot after install" >&2
	exit 1
fi
if [ ! -d "/usr/src/linux-headers-$kver" ]; then
	echo "deps: installing headers for $kver"
	apt_install "linux-headers-$kver"
fi
echo "deps: ok (kernel $kver)"
