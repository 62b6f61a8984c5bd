# The kselftests, in the order they run: read by selftests/build.mk (the
# build), selftests/Makefile (run_tests, install) and selftests/run-in-vm.sh
# (the VM harness, which parses the lists as NAME := a \ b ... with one
# name a line).
SELFTEST_NAMES := \
	nicoff_ioctl_test \
	nicoff_memlock_test \
	nicoff_unpriv_test \
	nicoff_mmap_test \
	nicoff_ring_test \
	nicoff_copy_test \
	nicoff_hostile_test \
	nicoff_kill_test \
	nicoff_nowake_test \
	nicoff_sleep_test \
	nicoff_fork_test \
	nicoff_ports_test \
	nicoff_p2p_test \
	nicoff_barrier_test \
	nicoff_bcast_test \
	nicoff_libbcast_test \
	nicoff_hostbarrier_test \
	nicoff_atomic_test \
	nicoff_lock_test \
	nicoff_ctl_test \
	nicoff_ping_test \
	nicoff_strided_test \
	nicoff_methods_test \
	nicoff_fuzz_test
# Run in a second VM boot without slab debugging, which would distort what
# they measure: kernel memory taken, and card-thread latency.
SELFTEST_NAMES_NODEBUG := \
	nicoff_memcharge_test \
	nicoff_neighbour_test
# Run by run-in-vm.sh after the others, the module reloaded with nics=1024.
SELFTEST_NAMES_1K := nicoff_barrier1k_test
