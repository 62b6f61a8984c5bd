#!/usr/bin/env bash
# `make check`: style gates, man pages, user-space unit tests (cmocka), the
# report of a recorded fixture, the VM harness's self-test, the kselftests in
# the VM, then the MPI tests in the VM (where MPICH is installed).  Ends with
# one line
# "N passed, N failed, N skipped" summed over every test run, and exits
# non-zero if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-$PWD/build}
log_dir=$BUILD/check
rm -rf "$log_dir"
mkdir -p "$log_dir"
passed=0 failed=0 skipped=0

# cmocka: "[  PASSED  ] N test(s)." / "[  FAILED  ] N test(s)"
count_cmocka() {
	local p f
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$1" | awk '{s+=$1} END {print s+0}')
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$1" | awk '{s+=$1} END {print s+0}')
	echo "$p $f"
}

# kselftest harness: "# Totals: pass:N fail:N xfail:N xpass:N skip:N error:N"
count_ksft() {
	local t
	t=$(grep -ao '# Totals: pass:[0-9]* fail:[0-9]* xfail:[0-9]* xpass:[0-9]* skip:[0-9]* error:[0-9]*' "$1" |
		awk -F'[: ]+' '{p+=$4+$8; f+=$6+$10+$14; s+=$12} END {print p+0, f+0, s+0}')
	echo "$t"
}

echo "== style"
if tools/style.sh; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

echo "== man pages"
# Each page of man/: mandoc's lint says nothing at warning level, and
# lexgrog (man-db, which indexes whatis) parses its NAME section.
for page in man/*.[1-8]; do
	lint=$(mandoc -T lint -W warning "$page" 2>&1)
	if [ -z "$lint" ] && lexgrog "$page" > /dev/null 2>&1; then
		passed=$((passed + 1))
		echo "ok - $page"
	else
		failed=$((failed + 1))
		[ -z "$lint" ] || echo "$lint"
		lexgrog "$page" || true
		echo "not ok - $page (mandoc -T lint -W warning, lexgrog)"
	fi
done

echo "== tools without the module"
# Every tool answers --version, and nicoffctl --help and its usage errors,
# before (and without) touching the module: exit 0, 0 and 2.
for t in ${TOOL_BINS:-}; do
	name=$(basename "$t")
	out=$("$t" --version 2>&1); rc=$?
	if [ "$rc" -eq 0 ] && [ "$out" = "$name ${out##* }" ] && [ -n "${out##* }" ]; then
		passed=$((passed + 1)); echo "ok - $name --version: $out"
	else
		failed=$((failed + 1)); echo "not ok - $name --version (exit $rc): $out"
	fi
done
ctl=$BUILD/bin/nicoffctl
"$ctl" --help 2>&1 | grep -q '^Exit status'; h_rc=$?
"$ctl" no-such-command > /dev/null 2>&1; u_rc=$?
if [ "$h_rc" -eq 0 ] && [ "$u_rc" -eq 2 ]; then
	passed=$((passed + 1)); echo "ok - nicoffctl --help, usage error exits 2"
else
	failed=$((failed + 1)); echo "not ok - nicoffctl --help (grep $h_rc), usage error (exit $u_rc, want 2)"
fi

echo "== ARMCI symbols Global Arrays needs (tools/armci-symbols.sh)"
BUILD=$BUILD tools/armci-symbols.sh > "$log_dir/armci-symbols.log" 2>&1
case $? in
0) passed=$((passed + 1)); echo "ok - $(tail -1 "$log_dir/armci-symbols.log")" ;;
77) skipped=$((skipped + 1)); echo "skip - $(tail -1 "$log_dir/armci-symbols.log")" ;;
*) failed=$((failed + 1)); cat "$log_dir/armci-symbols.log"; echo "not ok - armci-symbols" ;;
esac

echo "== unit tests (user space)"
for t in ${UNIT_TESTS:-}; do
	name=$(basename "$t")
	if "$t" > "$log_dir/$name.log" 2>&1; then rc=0; else rc=$?; fi
	read -r p f <<<"$(count_cmocka "$log_dir/$name.log")"
	passed=$((passed + p)); failed=$((failed + f))
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		# crashed or failed without a cmocka summary: one failure
		failed=$((failed + 1)); f=1
	fi
	if [ "$f" -ne 0 ]; then
		cat "$log_dir/$name.log"
		echo "not ok - $name ($p passed, $f failed)"
	else
		echo "ok - $name ($p passed)"
	fi
done

echo "== report of the recorded fixture (no VM)"
# tools/report builds every figure the fixture's records allow, and its
# index.html links only files it wrote.
r_log=$log_dir/report.log
if /usr/bin/python3 tools/report/test_report.py --sim "$BUILD/bin/nicoff-sim" > "$r_log" 2>&1; then r_rc=0; else r_rc=$?; fi
p=$(grep -acE '^ok ' "$r_log" || true)
f=$(grep -acE '^not ok ' "$r_log" || true)
[ "$r_rc" -eq 0 ] || [ "$f" -ne 0 ] || f=1
passed=$((passed + p)); failed=$((failed + f))
if [ "$f" -ne 0 ]; then
	cat "$r_log"
	echo "not ok - report of the fixture ($p passed, $f failed)"
else
	echo "ok - report of the fixture ($p passed)"
fi

echo "== VM harness self-test"
# tools/vm/selftest.sh: the harness catches every kind of kernel failure
# it must (TAP: one line per check).
h_log=$log_dir/vm-harness.log
if KERNEL=${VMLINUZ:-/boot/vmlinuz-$(tools/kver.sh 6.1)} tools/vm/selftest.sh > "$h_log" 2>&1; then h_rc=0; else h_rc=$?; fi
p=$(grep -acE '^ok ' "$h_log" || true)
s=$(grep -acE '^ok .*# SKIP' "$h_log" || true)
f=$(grep -acE '^not ok ' "$h_log" || true)
p=$((p - s))
passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
if [ "$f" -ne 0 ]; then
	grep -aE '^not ok ' "$h_log"
	echo "not ok - VM harness self-test ($p passed, $f failed, see $h_log)"
else
	echo "ok - VM harness self-test ($p passed, $s skipped)"
fi
if [ "$h_rc" -ne 0 ] && [ "$f" -eq 0 ]; then
	cat "$h_log"
	echo "not ok - VM harness self-test failed (see $h_log)"
	failed=$((failed + 1))
fi


# One VM run of every kselftest: $1 names it, the rest goes to run-in-vm.sh's
# environment (KERNEL, MODULE).
vm_selftests() {
	local name=$1 vm_log=$log_dir/selftests-vm-$1.log p f s vm_rc
	shift
	echo "== kselftests (VM, $name)"
	if env "$@" selftests/run-in-vm.sh > "$vm_log" 2>&1; then vm_rc=0; else vm_rc=$?; fi
	# Show the TAP results of the tests, not the boot chatter; after a failed
	# expectation, the test's own explanation (its TH_LOG line) too.
	awk '/^(# )?(TAP version|1\.\.|ok |not ok |# Totals|# .*(FAIL|Expected))|^=== vm: (PASS|FAIL)/ {
		print; why = /Expected/; next }
	why && /^# # / { print } { why = 0 }' "$vm_log" || true
	read -r p f s <<<"$(count_ksft "$vm_log")"
	passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
	if [ "$vm_rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		# The VM run failed beyond any single test (WARN, oops, rmmod, timeout).
		tail -n 80 "$vm_log"
		echo "not ok - VM run on $name failed (see $vm_log)"
		failed=$((failed + 1))
	fi
}

if [ -n "${VMLINUZ:-}" ]; then
	# `make check VMLINUZ=...`: that kernel, with the module `make` built.
	vm_selftests "$(basename "$VMLINUZ")" KERNEL="$VMLINUZ"
	mpi_env="KERNEL=$VMLINUZ"
else
	for line in ${CHECK_KERNELS:-6.1 6.12}; do
		kver=$(tools/kver.sh "$line")
		if ! mod=$(tools/module.sh "$line" 2> "$log_dir/module-$line.log"); then
			cat "$log_dir/module-$line.log"
			echo "not ok - nicoff.ko for $line${kver:+ ($kver)} does not build"
			failed=$((failed + 1))
			continue
		fi
		echo "ok - nicoff.ko builds for $kver"
		passed=$((passed + 1))
		vm_selftests "$kver" KERNEL="/boot/vmlinuz-$kver" MODULE="$mod"
		# The MPI tests boot the first of these kernels.
		[ -n "${mpi_env:-}" ] || mpi_env="KERNEL=/boot/vmlinuz-$kver MODULE=$mod"
	done
fi

# A VM stage's TAP log (one line per run) into the totals: its results
# shown (skips aside, counted with skip_note), and one failure more when the
# stage failed (exit rc) without a failing line.
# count_tap LOG RC NAME SKIP_NOTE
count_tap() {
	local log=$1 rc=$2 name=$3 skip_note=$4 p s f
	grep -aE '^(not )?ok ' "$log" | grep -av '# SKIP' || true
	p=$(grep -acE '^ok ' "$log" || true)
	s=$(grep -acE '^ok .*# SKIP' "$log" || true)
	f=$(grep -acE '^not ok ' "$log" || true)
	p=$((p - s))
	passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
	[ "$s" -eq 0 ] || echo "# $s $skip_note"
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		tail -n 80 "$log"
		echo "not ok - $name VM run failed (see $log)"
		failed=$((failed + 1))
	fi
}

# The MPI test programs under MPICH's mpiexec in one VM boot (the first kernel), plain
# and, when the PMPI library is built, with it preloaded, on the card and with
# its timed selection (TAP: one line per run; the preload runs without the
# library are skips).
mpi_lib=$BUILD/lib/libnicoff-mpi-mpich.so
if [ -x "$BUILD/mpi-tests/mpi_kill" ] && [ -n "${mpi_env:-}" ]; then
	echo "== MPI tests (VM)"
	m_log=$log_dir/mpi-tests.log
	# shellcheck disable=SC2086 # mpi_env is NAME=VALUE words
	if env BUILD="$BUILD" $mpi_env NICOFF_MPI_LIB="$([ -f "$mpi_lib" ] && echo "$mpi_lib")" \
		tools/mpi-tests.sh > "$m_log" 2>&1; then m_rc=0; else m_rc=$?; fi
	count_tap "$m_log" "$m_rc" "MPI tests" "preload runs skipped: no $mpi_lib"
elif [ ! -x "$BUILD/mpi-tests/mpi_kill" ]; then
	echo "== MPI tests: not built (mpicc.mpich missing: make deps)"
fi

# The ARMCI test programs and the GA program in one VM boot (the first kernel):
# Debian's ARMCI-MPI (the control) and, where libarmci-nicoff is built, the
# card, at 2 and 4 ranks, then the -nicoff builds at 2 ranks under 1% drop and
# 1% reorder, and with each strided method other than nic (tools/armci-tests.sh;
# every count: ARMCI_TESTS_RANKS, `make armci-tests`).  About 2 minutes for the
# control alone (130 s measured).
if [ -x "$BUILD/armci-tests/armci_strided-armci-mpi" ] && [ -n "${mpi_env:-}" ]; then
	echo "== ARMCI tests (VM)"
	a_log=$log_dir/armci-tests.log
	# shellcheck disable=SC2086 # mpi_env is NAME=VALUE words
	if env BUILD="$BUILD" $mpi_env ARMCI_TESTS_RANKS="${ARMCI_TESTS_RANKS:-2 4}" \
		ARMCI_TESTS_FAULT_RANKS="${ARMCI_TESTS_FAULT_RANKS-2}" \
		tools/armci-tests.sh > "$a_log" 2>&1; then a_rc=0; else a_rc=$?; fi
	count_tap "$a_log" "$a_rc" "ARMCI tests" "runs skipped: no -nicoff builds (libarmci-nicoff)"
elif [ ! -x "$BUILD/armci-tests/armci_strided-armci-mpi" ]; then
	echo "== ARMCI tests: not built (ARMCI-MPI, GA or mpicc.mpich missing: make deps)"
fi

echo
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
