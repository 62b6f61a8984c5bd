#!/usr/bin/env bash
# tools/vm/run.sh - boot a throwaway QEMU VM (TCG only) with a busybox
# initramfs, optionally insmod a kernel module, run commands in the guest and
# report PASS/FAIL.  See tools/vm/README.md.
#
# Result channel: the guest writes one "NICOFF-VM-RESULT: ..." line (and any
# collected files, base64 between markers) to its second serial port, which
# QEMU writes to a file on the host.  The console (first serial port) goes to a
# log file that is also scanned here, because a panic or a hang never reaches
# the guest's own checks.
set -euo pipefail
# modinfo and modprobe live in /usr/sbin, not in every user's PATH.
PATH=$PATH:/usr/sbin:/sbin

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
prog=${0##*/}

# Kernel log lines that make a run fail (extended regex, shared with the
# guest through its config file): warnings and oopses; slub_debug's reports
# ("BUG kmalloc-64 (Tainted: ...): Poison overwritten", and the same for any
# other cache); hung tasks, soft lockups and RCU stalls.  tools/vm/selftest.sh
# proves each one is caught.
FAIL_REGEX='WARNING:|BUG:|Oops|Call Trace|lockup|hung_task|blocked for more than|general protection|kernel BUG|UBSAN|refcount_t|Kernel panic'
FAIL_REGEX+='|Poison overwritten|Redzone overwritten|Object already free|Freepointer corrupt'
FAIL_REGEX+='|BUG kmalloc|BUG [^ ]+ \((Not tainted|Tainted)'
FAIL_REGEX+='|soft lockup|hard LOCKUP|self-detected stall|detected stalls|detected expedited stalls|RCU Stall'
# Expected lines that are never failures (loading an unsigned out-of-tree
# module taints the kernel).
IGNORE_REGEX='module verification failed: signature and/or required key missing - tainting kernel|loading out-of-tree module taints kernel'
RESULT_TAG='NICOFF-VM-RESULT:'

usage() {
	cat <<EOF
Usage: $prog [options]

  --kernel PATH        guest kernel (default: the newest 6.1 cloud kernel in /boot)
  --module PATH        kernel module (.ko) to insmod in the guest (optional)
  --params "k=v ..."   module parameters for insmod
  --deps-of PATH       load the guest kernel's modules that the module PATH
                       needs, not PATH itself (for commands that insmod it;
                       repeatable); --module does this for its module
  --bin PATH           host executable to copy to /bin in the guest, with the
                       shared libraries ldd finds for it (repeatable)
  --lib-path DIR       extra LD_LIBRARY_PATH entry for ldd and in the guest;
                       the shared objects in DIR are copied too (repeatable)
  --file HOST:GUEST    copy a file (or directory) into the guest (repeatable)
  --cmd "COMMAND"      shell command run in the guest in /tmp; must exit 0
                       (repeatable, run in order)
  --keep-going         run all commands even after one fails (still fails)
  --mpi                MPICH's mpiexec (hydra) in the guest: its launcher and
                       proxy, libmpich with UCX's transport modules, loopback
                       up, a hosts entry, and the environment for one host
  --openmpi            Open MPI's mpirun (orterun) in the guest: orted, libmpi,
                       its MCA and PMIx components, their data files, loopback
                       up, a hosts entry, and the environment for one host
  --collect GUEST:HOST bring a guest file back to the host after the commands;
                       a relative GUEST path is relative to /tmp (repeatable)
  --timeout SECS       kill QEMU and fail after SECS seconds (default 300)
  --shell              interactive: boot, load the module, run the commands,
                       then a busybox shell on the console; no result checks
                       (exit with 'poweroff' or Ctrl-A x)
  --memory MB          guest memory (default 1024)
  --smp N              guest CPUs (default 2)
  --log FILE           keep the full console log in FILE
  --quiet              do not stream the console (the log is printed on failure)
  --slub-debug FLAGS   boot with slub_debug=FLAGS (default: \$VM_SLUB_DEBUG, or
                       FZPU if unset; "" or "off": no slub_debug)
  --scan-log FILE      no VM: scan FILE as a console log the way a run does
                       (host and guest scan), print what matches a failure
                       pattern; exit 0 clean, 1 a failure pattern, 3 the two
                       scans disagree
  -h, --help           this text

Exit status: 0 PASS, 1 FAIL, 2 usage or setup error.
EOF
}

die() {
	echo "$prog: $*" >&2
	exit 2
}

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

# Seconds between two $EPOCHREALTIME values, one decimal.
elapsed() {
	local a=${1/[.,]/} b=${2/[.,]/} d
	d=$(((10#$b - 10#$a) / 100000))
	printf '%d.%d' $((d / 10)) $((d % 10))
}

# Quote a string for a POSIX shell (single quotes).
sq() {
	local s=${1//\'/\'\\\'\'}
	printf "'%s'" "$s"
}

kernel=""
module=""
deps_of=()
params=""
bins=()
lib_paths=()
files=()
cmds=()
collects=()
keep_going=0
mpi=0
openmpi=0
timeout_secs=300
shell_mode=0
memory=1024
smp=2
log=""
quiet=0
# slub_debug: F sanity checks, Z red zones, P poisoning, U owner tracking.
slub_debug=${VM_SLUB_DEBUG-FZPU}
scan_log=""

while (($#)); do
	opt=$1
	val=""
	has_val=0
	if [[ $opt == --*=* ]]; then
		val=${opt#*=}
		opt=${opt%%=*}
		has_val=1
	fi
	case $opt in
	--kernel | --module | --params | --deps-of | --bin | --lib-path | --file | --cmd | --collect | \
		--timeout | --memory | --smp | --log | --slub-debug | --scan-log)
		if ((!has_val)); then
			(($# >= 2)) || die "$opt needs a value"
			val=$2
			shift
		fi
		;;
	--keep-going | --mpi | --openmpi | --shell | --quiet | -h | --help)
		((!has_val)) || die "$opt takes no value"
		;;
	*) die "unknown option: $opt (see --help)" ;;
	esac
	shift
	case $opt in
	--kernel) kernel=$val ;;
	--module) module=$val ;;
	--params) params=$val ;;
	--deps-of) deps_of+=("$val") ;;
	--bin) bins+=("$val") ;;
	--lib-path) lib_paths+=("$val") ;;
	--file) files+=("$val") ;;
	--cmd) cmds+=("$val") ;;
	--collect) collects+=("$val") ;;
	--timeout) timeout_secs=$val ;;
	--memory) memory=$val ;;
	--smp) smp=$val ;;
	--log) log=$val ;;
	--slub-debug) slub_debug=$val ;;
	--scan-log) scan_log=$val ;;
	--keep-going) keep_going=1 ;;
	--mpi) mpi=1 ;;
	--openmpi) openmpi=1 ;;
	--shell) shell_mode=1 ;;
	--quiet) quiet=1 ;;
	-h | --help)
		usage
		exit 0
		;;
	esac
done

# shellcheck source=tools/vm/logscan.sh
. "$here/logscan.sh"
fail_regex=$FAIL_REGEX
ignore_regex=$IGNORE_REGEX

busybox=${BUSYBOX:-/bin/busybox}

# --scan-log: the host's scan (this shell, the host's grep) and the guest's
# (busybox sh and busybox grep, as in the VM) of one file.
if [[ -n $scan_log ]]; then
	[[ -f $scan_log && -r $scan_log ]] || die "--scan-log: not a readable file: $scan_log"
	[[ -x $busybox ]] || die "$busybox not found (apt-get install busybox-static)"
	host_hits=$(log_hits "$scan_log")
	bbdir=$(mktemp -d "${TMPDIR:-/tmp}/nicoff-scan.XXXXXX")
	for a in sh grep tr; do ln -s "$busybox" "$bbdir/$a"; done
	# shellcheck disable=SC2016 # expanded by the busybox shell
	guest_hits=$(PATH=$bbdir fail_regex=$FAIL_REGEX ignore_regex=$IGNORE_REGEX \
		"$bbdir/sh" -c '. "$1"; log_hits "$2"' sh "$here/logscan.sh" "$scan_log") ||
		guest_hits="(busybox sh failed)"
	rm -rf "$bbdir"
	echo "host: ${host_hits:-clean}"
	echo "guest: ${guest_hits:-clean}"
	if [[ -z $host_hits && -z $guest_hits ]]; then
		exit 0
	elif [[ -n $host_hits && -n $guest_hits ]]; then
		exit 1
	fi
	exit 3
fi

if ! is_uint "$timeout_secs" || ((timeout_secs == 0)); then
	die "--timeout: not a positive integer: $timeout_secs"
fi
if ! is_uint "$memory" || ((memory < 128)); then
	die "--memory: need an integer >= 128: $memory"
fi
if ! is_uint "$smp" || ((smp == 0)); then
	die "--smp: not a positive integer: $smp"
fi

qemu_bin="qemu-system-x86_64"
command -v "$qemu_bin" >/dev/null || die "$qemu_bin not found (apt-get install qemu-system-x86)"
for tool in cpio gzip ldd base64 sha256sum timeout tail; do
	command -v "$tool" >/dev/null || die "$tool not found"
done
[[ -x $busybox ]] || die "$busybox not found (apt-get install busybox-static)"

if [[ -z $kernel ]]; then
	# Debian 12's line; --kernel for another (make check runs 6.12 too).
	kernel=$("$(dirname "${BASH_SOURCE[0]}")/../kver.sh" 6.1)
	[[ -n $kernel ]] || die "no 6.1 cloud kernel in /boot (make deps) and no --kernel"
	kernel=/boot/vmlinuz-$kernel
fi
[[ -f $kernel && -r $kernel ]] || die "kernel not readable: $kernel"

if [[ -n $params && -z $module ]]; then
	die "--params needs --module"
fi
mod_name=""
if [[ -n $module ]]; then
	[[ -f $module && -r $module ]] || die "module not readable: $module"
	if command -v modinfo >/dev/null; then
		mod_name=$(modinfo -F name "$module" 2>/dev/null || true)
	fi
	if [[ -z $mod_name ]]; then
		mod_name=${module##*/}
		mod_name=${mod_name%.ko}
		mod_name=${mod_name//-/_}
	fi
fi

# The guest kernel's own modules that @1 needs (its symbol dependencies and
# their soft dependencies, as libcrc32c's on crc32c-intel), in the order
# modprobe would load them, into @2 as NN-name.ko, decompressed: the guest
# loads them with busybox's insmod before the module.
declare -A deps_seen=()
deps_n=0
copy_module_deps() {
	local ko=$1 dir=$2 kver dep verb path name

	mkdir -p "$dir"
	kver=$(modinfo -F vermagic "$ko" | cut -d' ' -f1)
	for dep in $(modinfo -F depends "$ko" | tr , ' '); do
		modprobe -S "$kver" --show-depends "$dep" >"$work/deps" 2>&1 ||
			die "$ko needs $dep, which kernel $kver's modules do not provide: $(cat "$work/deps")"
		while read -r verb path _; do
			[[ $verb == insmod && -z ${deps_seen[$path]:-} ]] || continue
			deps_seen[$path]=1
			deps_n=$((deps_n + 1))
			name=$(printf '%s/%02d-%s' "$dir" "$deps_n" "${path##*/}")
			case $path in
			*.xz) xz -dc "$path" >"${name%.xz}" ;;
			*.zst) zstd -qdc "$path" >"${name%.zst}" ;;
			*.gz) gzip -dc "$path" >"${name%.gz}" ;;
			*) cp "$path" "$name" ;;
			esac
		done <"$work/deps"
	done
}

start_time=$EPOCHREALTIME
work=$(mktemp -d "${TMPDIR:-/tmp}/nicoff-vm.XXXXXX")
qemu_pid=""
tail_pid=""
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	if [[ -n $qemu_pid ]]; then kill "$qemu_pid" 2>/dev/null || true; fi
	if [[ -n $tail_pid ]]; then kill "$tail_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "$prog: interrupted" >&2; exit 130' INT TERM HUP

root=$work/root
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,root,etc,vm/cmds}

# --- initramfs contents ------------------------------------------------------

# Absolute --lib-path directories: ldd reports libraries by the path they
# were found at, and the guest gets them at that same path.
for i in "${!lib_paths[@]}"; do
	[[ -d ${lib_paths[$i]} ]] || die "--lib-path: not a directory: ${lib_paths[$i]}"
	lib_paths[i]=$(cd "${lib_paths[$i]}" && pwd -P)
done

declare -A copied=()
guest_ld_dirs=("${lib_paths[@]}")
declare -A guest_ld_seen=()
for d in "${lib_paths[@]}"; do guest_ld_seen[$d]=1; done

# Copy a host file to the same absolute path in the guest (contents of
# symlinks are copied, so the guest gets regular files).
copy_same_path() {
	local src=$1
	[[ -n ${copied[$src]:-} ]] && return 0
	copied[$src]=1
	mkdir -p "$root${src%/*}"
	cp -L "$src" "$root$src"
}

ld_library_path() {
	local IFS=:
	local p="${lib_paths[*]}"
	if [[ -n ${LD_LIBRARY_PATH:-} ]]; then
		p=${p:+$p:}$LD_LIBRARY_PATH
	fi
	printf '%s' "$p"
}

# Copy every shared library (and the dynamic loader) that ldd reports for an
# executable or shared object.
copy_deps() {
	local exe=$1 out line lib
	out=$(LD_LIBRARY_PATH=$(ld_library_path) ldd "$exe" 2>&1) || true
	while IFS= read -r line; do
		line=${line#"${line%%[![:space:]]*}"}
		case $line in
		*"=> not found"*) die "$exe: shared library not found: ${line%% *} (add --lib-path?)" ;;
		*"=> "*) lib=${line#*=> } ;;
		/*) lib=$line ;;
		*) continue ;;
		esac
		lib=${lib% (0x*}
		[[ -n $lib ]] || continue
		[[ -e $lib ]] || die "$exe: ldd reported a missing file: $lib"
		if [[ $lib != /* ]]; then
			lib=$(cd "${lib%/*}" && pwd -P)/${lib##*/}
		fi
		copy_same_path "$lib"
		# The library's directory goes on the guest's LD_LIBRARY_PATH
		# too, in case the host found it through LD_LIBRARY_PATH.
		if [[ -z ${guest_ld_seen[${lib%/*}]:-} ]]; then
			guest_ld_seen[${lib%/*}]=1
			guest_ld_dirs+=("${lib%/*}")
		fi
	done <<<"$out"
}

cp "$busybox" "$root/bin/busybox"
copy_deps "$busybox" # nothing for busybox-static
ln -s busybox "$root/bin/sh"
cp "$here/init" "$root/init"
chmod 755 "$root/init"
cp "$here/logscan.sh" "$root/vm/logscan.sh"

for b in "${bins[@]}"; do
	[[ -f $b && -x $b ]] || die "--bin: not an executable file: $b"
	dst=$root/bin/${b##*/}
	rm -f "$dst"
	cp -L "$b" "$dst"
	copy_deps "$b"
done

# --mpi: MPICH from the installed packages (mpich, libmpich12).  Hydra
# starts its proxy from its own directory; libmpich's UCX dlopens its
# transports from the ucx/ directory beside libuct, which ldd never lists.
mpi_env=""
if ((mpi)); then
	hydra=$(command -v mpiexec.hydra) || die "--mpi: mpiexec.hydra not found (apt-get install mpich)"
	proxy=$(command -v hydra_pmi_proxy) || die "--mpi: hydra_pmi_proxy not found (apt-get install mpich)"
	for b in "$hydra" "$proxy"; do
		cp -L "$b" "$root/bin/${b##*/}"
		copy_deps "$b"
	done
	ln -sf mpiexec.hydra "$root/bin/mpiexec"
	# awk reads all of ldconfig's output: leaving early would kill ldconfig
	# with SIGPIPE now and then (its list is about a pipe buffer long), and
	# with pipefail that ended this script silently.
	libmpich=$(ldconfig -p | awk '$1 == "libmpich.so.12" && /x86-64/ && !found { print $NF; found = 1 }')
	[[ -n $libmpich ]] || die "--mpi: libmpich.so.12 not found (apt-get install libmpich12)"
	copy_same_path "$libmpich"
	copy_deps "$libmpich"
	libuct=$(LD_LIBRARY_PATH=$(ld_library_path) ldd "$libmpich" | awk '$1 == "libuct.so.0" { print $3 }')
	if [[ -n $libuct && -d ${libuct%/*}/ucx ]]; then
		for so in "${libuct%/*}"/ucx/*.so.0; do
			[[ -f $so ]] || continue
			copy_same_path "$so"
			copy_deps "$so"
		done
	fi
	# One host, no ssh: hydra forks its proxy; UCX uses shared memory and
	# loopback only (the guest has no network device).
	mpi_env="HYDRA_LAUNCHER=fork UCX_TLS=self,sm"
fi

# Copy the libraries that the shared objects @ need (DT_NEEDED, read with one
# readelf for all of them), each with what ldd lists for it: one ldd per
# library instead of one per object, for the many plugins of Open MPI.
copy_needed() {
	local soname lib
	ldconfig -p >"$work/ldconfig"
	for soname in $(readelf -d "$@" | awk '$2 == "(NEEDED)" { gsub(/[][]/, "", $NF); print $NF }' | sort -u); do
		lib=$(awk -v n="$soname" '$1 == n && /x86-64/ { print $NF; exit }' "$work/ldconfig")
		[[ -n $lib ]] || die "--openmpi: shared library not found: $soname"
		[[ -n ${copied[$lib]:-} ]] && continue
		copy_same_path "$lib"
		copy_deps "$lib"
	done
}

# --openmpi: Open MPI from the installed packages (openmpi-bin, libopenmpi3).
# orterun starts one orted, found in PATH; both dlopen their MCA components
# and PMIx its plugins from the directories they were built with, and read
# their parameter files and help texts from /etc and /usr/share.
if ((openmpi)); then
	orterun=$(command -v orterun) || die "--openmpi: orterun not found (apt-get install openmpi-bin)"
	orted=$(command -v orted) || die "--openmpi: orted not found (apt-get install openmpi-bin)"
	for b in "$orterun" "$orted"; do
		cp -L "$b" "$root/bin/${b##*/}"
		copy_deps "$b"
	done
	ln -sf orterun "$root/bin/mpirun"
	ln -sf orterun "$root/bin/mpirun.openmpi"
	# (all of ldconfig's list read: awk leaving early would kill it with SIGPIPE)
	libmpi=$(ldconfig -p | awk '$1 == "libmpi.so.40" && /x86-64/ && !p { print $NF; p = 1 }')
	[[ -n $libmpi ]] || die "--openmpi: libmpi.so.40 not found (apt-get install libopenmpi3)"
	copy_same_path "$libmpi"
	copy_deps "$libmpi"
	ompi_lib=$(cd "${libmpi%/*}" && pwd -P)
	[[ -d $ompi_lib/openmpi/lib/openmpi3 && -d $ompi_lib/pmix2 ]] ||
		die "--openmpi: no MCA components in $ompi_lib/openmpi/lib/openmpi3 or no $ompi_lib/pmix2"
	# Not the components of networks and batch systems the guest has no
	# device or daemon for (OFI, InfiniBand, PSM, UCX, Slurm, Flux, Grid
	# Engine, LSF), nor OpenSHMEM's: they only add libraries and seconds.
	mca=()
	for so in "$ompi_lib"/openmpi/lib/openmpi3/mca_*.so "$ompi_lib"/pmix2/lib/pmix/*.so; do
		case ${so##*/} in
		*_ofi.so | *_openib.so | *_psm.so | *_psm2.so | *_ucx.so | *_slurm.so | *_flux.so | \
			*_gridengine.so | *_jsm.so | mca_atomic_* | mca_memheap_* | mca_scoll_* | \
			mca_spml_* | mca_sshmem_*) continue ;;
		esac
		copy_same_path "$so"
		mca+=("$so")
	done
	((${#mca[@]})) && copy_needed "${mca[@]}"
	for d in /etc/openmpi /usr/share/openmpi "$ompi_lib/pmix2/share"; do
		[[ -d $d ]] || die "--openmpi: $d not found (apt-get install openmpi-bin openmpi-common)"
		mkdir -p "$root${d%/*}"
		cp -RL "$d" "$root$d"
	done
	# One host, no ssh (the isolated launcher forks orted); root may run
	# ranks (the guest runs everything as root); more ranks than CPUs.
	mpi_env="${mpi_env:+$mpi_env }OMPI_MCA_plm=isolated OMPI_ALLOW_RUN_AS_ROOT=1"
	mpi_env="$mpi_env OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1"
fi

for d in "${lib_paths[@]}"; do
	# Shared objects of the project library that nothing above needed
	# directly (e.g. loaded with dlopen), with their own dependencies.
	for so in "$d"/*.so "$d"/*.so.*; do
		[[ -f $so ]] || continue
		copy_same_path "$so"
		copy_deps "$so"
	done
done

for spec in "${files[@]}"; do
	[[ $spec == *:* ]] || die "--file: expected HOST:GUEST: $spec"
	src=${spec%:*}
	dst=${spec##*:}
	[[ -e $src ]] || die "--file: no such file: $src"
	[[ $dst == /* ]] || die "--file: guest path must be absolute: $spec"
	[[ $dst == */ ]] && dst=$dst${src##*/}
	mkdir -p "$root${dst%/*}"
	rm -rf "$root$dst"
	cp -RL --preserve=mode,timestamps "$src" "$root$dst"
done

mod_guest=""
if [[ -n $module ]]; then
	mod_guest=/${module##*/}
	cp "$module" "$root$mod_guest"
	copy_module_deps "$module" "$root/vm/deps"
fi
for ko in "${deps_of[@]}"; do
	[[ -f $ko && -r $ko ]] || die "--deps-of: module not readable: $ko"
	copy_module_deps "$ko" "$root/vm/deps"
done

i=0
for c in "${cmds[@]}"; do
	i=$((i + 1))
	printf '%s\n' "$c" >"$root/vm/cmds/$(printf '%04d' "$i")"
done

: >"$root/vm/collect"
for spec in "${collects[@]}"; do
	[[ $spec == ?*:?* ]] || die "--collect: expected GUEST:HOST: $spec"
	printf '%s\n' "${spec%%:*}" >>"$root/vm/collect"
done

guest_ld_path=$(
	IFS=:
	printf '%s' "${guest_ld_dirs[*]}"
)
{
	echo "# generated by $prog"
	echo "module_file=$(sq "$mod_guest")"
	echo "module_name=$(sq "$mod_name")"
	echo "module_params=$(sq "$params")"
	echo "keep_going=$keep_going"
	echo "mpi=$((mpi || openmpi))"
	echo "mpi_env=$(sq "$mpi_env")"
	echo "shell_mode=$shell_mode"
	echo "guest_ld_path=$(sq "$guest_ld_path")"
	echo "fail_regex=$(sq "$FAIL_REGEX")"
	echo "ignore_regex=$(sq "$IGNORE_REGEX")"
} >"$root/vm/config"

initrd=$work/initramfs.cpio.gz
(cd "$root" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
	cpio --null --create --format=newc --owner=0:0 --quiet) | gzip -1 >"$initrd"
build_time=$EPOCHREALTIME

# --- run QEMU ----------------------------------------------------------------

log_kept=$log
if [[ -z $log ]]; then
	log=$work/console.log
fi
: >"$log"
result=$work/result.txt
: >"$result"
qemu_err=$work/qemu.stderr
# QEMU option values: a comma is written twice.
qlog=${log//,/,,}
qresult=${result//,/,,}

# TCG's TSC follows the host clock, the same on every vCPU, but the guest
# distrusts it and falls back to the HPET, whose every read is an emulated
# MMIO access under QEMU's global lock (1-4 us against 60 ns): every
# clock_gettime, ktime_get and timer of the guest paid that.  slub_debug
# (--slub-debug, VM_SLUB_DEBUG, default FZPU) makes the slab allocator check
# red zones and poison on every free and allocation, so a use after free or
# an overflow of a kmalloc'ed object shows in the log.  KAPPEND adds kernel
# arguments.
#
# The CPU is QEMU's "max" without two features TCG emulates far slower than
# the code the guest uses in their absence, so that what a run measures is
# the module, not the emulator.  The fast-string features (ERMS, FSRM and
# kin): from them the kernel chooses `rep movsb`/`rep stosb` for memcpy,
# memset and the user copies, which TCG runs one byte per iteration
# (measured in the guest on 4 KiB: rep movsb 608 MB/s, rep movsq 4,583,
# glibc's vector memcpy 4,512).  SSE4.2: its crc32 instruction is emulated
# one bit at a time, so crc32c-intel ran the wire CRC four times slower
# than the kernel's table-driven crc32c (p2p bandwidth 36 MB/s against
# 147).  VM_CPU replaces the model.
slub_arg=""
if [[ -n $slub_debug && $slub_debug != off ]]; then
	slub_arg=" slub_debug=$slub_debug"
fi
qemu=("$qemu_bin"
	-accel "tcg,thread=multi" -cpu "${VM_CPU:-max,-erms,-fsrm,-fzrm,-fsrs,-fsrc,-sse4.2}" -smp "$smp" -m "$memory"
	-nodefaults -display none -no-reboot
	-kernel "$kernel" -initrd "$initrd"
	-append "console=ttyS0 panic=-1 loglevel=5 ${VM_CLOCK-tsc=reliable clocksource=tsc}${slub_arg} ${KAPPEND:-}")

if ((shell_mode)); then
	"${qemu[@]}" \
		-chardev "stdio,id=con0,mux=on,signal=off,logfile=$qlog,logappend=on" \
		-serial chardev:con0 -mon chardev=con0,mode=readline \
		-chardev "file,id=res0,path=$qresult" -serial chardev:res0 || exit $?
	exit 0
fi

printf '=== vm: kernel %s, initramfs %s KiB built in %s s\n' "$kernel" \
	"$(($(stat -c %s "$initrd") / 1024))" "$(elapsed "$start_time" "$build_time")"

timeout --kill-after=5 "$timeout_secs" "${qemu[@]}" \
	-chardev "file,id=con0,path=$qlog,append=on" -serial chardev:con0 \
	-chardev "file,id=res0,path=$qresult" -serial chardev:res0 \
	</dev/null 2>"$qemu_err" &
qemu_pid=$!
if ((!quiet)); then
	tail -n +1 -s 0.1 -f --pid="$qemu_pid" "$log" &
	tail_pid=$!
fi
qemu_rc=0
wait "$qemu_pid" || qemu_rc=$?
qemu_pid=""
if [[ -n $tail_pid ]]; then
	wait "$tail_pid" || true
	tail_pid=""
fi
end_time=$EPOCHREALTIME

# --- verdict -----------------------------------------------------------------

reasons=()
if ((qemu_rc == 124 || qemu_rc == 137)); then
	reasons+=("timeout after ${timeout_secs} s")
elif ((qemu_rc != 0)); then
	reasons+=("qemu exited with status $qemu_rc")
fi

tr -d '\r' <"$result" >"$result.clean"
nres=$(grep -c "^$RESULT_TAG " "$result.clean" || true)
res_line=$(grep -m 1 "^$RESULT_TAG " "$result.clean" || true)
if ((nres == 0)); then
	if ! grep -q '^=== vm: init started' "$log"; then
		reasons+=("no result: the guest never reached /init")
	else
		reasons+=("no result line from the guest (panic, hang or crash?)")
	fi
elif ((nres > 1)); then
	reasons+=("$nres result lines from the guest")
elif [[ $res_line != "$RESULT_TAG PASS" ]]; then
	reasons+=("guest: ${res_line#"$RESULT_TAG "}")
fi

# (The guest's echo of each command is not scanned: a command may mention a
# pattern, e.g. "dmesg | grep WARNING:".)
hits=$(log_hits "$log")
if [[ -n $hits ]]; then
	reasons+=("console log matches a failure pattern: $(head -n 1 <<<"$hits")")
fi

# Collected files: "NICOFF-VM-FILE-BEGIN <i> <sha256> <size> gzip", the file
# compressed with gzip and encoded with base64,
# "NICOFF-VM-FILE-END <i>", or "NICOFF-VM-FILE-MISSING <i>".
for i in "${!collects[@]}"; do
	spec=${collects[$i]}
	gpath=${spec%%:*}
	hpath=${spec#*:}
	if grep -qx "NICOFF-VM-FILE-MISSING $i" "$result.clean"; then
		reasons+=("collect: $gpath missing in the guest")
		continue
	fi
	header=$(grep -m 1 "^NICOFF-VM-FILE-BEGIN $i " "$result.clean" || true)
	if [[ -z $header ]]; then
		reasons+=("collect: $gpath not received")
		continue
	fi
	read -r _ _ want_sum want_size _ <<<"$header"
	awk -v b="NICOFF-VM-FILE-BEGIN $i " -v e="NICOFF-VM-FILE-END $i" '
		$0 == e && on { ended = 1; exit }
		on { print }
		index($0, b) == 1 { on = 1 }
		END { exit !ended }' "$result.clean" >"$work/collect.b64" ||
		{
			reasons+=("collect: $gpath truncated")
			continue
		}
	if ! base64 -d <"$work/collect.b64" | gzip -dc >"$work/collect.bin"; then
		reasons+=("collect: $gpath: corrupt transfer")
		continue
	fi
	got_sum=$(sha256sum <"$work/collect.bin")
	got_sum=${got_sum%% *}
	if [[ $got_sum != "$want_sum" ]]; then
		reasons+=("collect: $gpath: checksum mismatch ($(stat -c %s "$work/collect.bin") of $want_size bytes)")
		continue
	fi
	if [[ $hpath == */* ]]; then mkdir -p "${hpath%/*}"; fi
	cp "$work/collect.bin" "$hpath"
	echo "=== vm: collected $gpath -> $hpath ($want_size bytes)"
done

total=$(elapsed "$start_time" "$end_time")
if ((${#reasons[@]} == 0)); then
	echo "=== vm: PASS (${total} s)"
	exit 0
fi

{
	if ((quiet)); then
		echo "=== vm: full console log${log_kept:+ ($log)}:"
		cat "$log"
	else
		echo "=== vm: last 200 lines of the console log${log_kept:+ ($log)}:"
		tail -n 200 "$log"
	fi
	if [[ -s $qemu_err ]]; then
		echo "=== vm: qemu stderr:"
		cat "$qemu_err"
	fi
	echo "=== vm: FAIL (${total} s):"
	printf '  %s\n' "${reasons[@]}"
} >&2
exit 1
