# selftests build: kernel selftests of nicoff.ko, written with the kselftest
# harness (kselftest_harness.h, extracted at build time into $(KSFT_DIR) by
# mk/cache.mk, never copied into the repo) against the raw ABI of
# include/uapi/nicoff.h, their commands built with libnicoff's header-only
# <nicoff/prep.h>.  They only run in the VM: selftests/run-in-vm.sh.
#
#   make selftests        build them into $(BUILD)/selftests/
#   make selftests-vm     build the module and them, run all in one VM boot

SELFTEST_DIR := $(BUILD)/selftests
SELFTEST_NAMES := \
	nicoff_ioctl_test \
	nicoff_memlock_test \
	nicoff_unpriv_test \
	nicoff_mmap_test \
	nicoff_ring_test \
	nicoff_hostile_test \
	nicoff_kill_test \
	nicoff_nowake_test \
	nicoff_sleep_test \
	nicoff_fork_test \
	nicoff_ports_test \
	nicoff_p2p_test \
	nicoff_barrier_test \
	nicoff_hostbarrier_test \
	nicoff_atomic_test \
	nicoff_lock_test \
	nicoff_fuzz_test
# Run in a second VM boot without slab debugging, which would distort what
# they measure: kernel memory taken, and card-thread latency.
SELFTEST_NAMES_NODEBUG := \
	nicoff_memcharge_test \
	nicoff_neighbour_test
# Run by run-in-vm.sh after the others, the module reloaded with nics=1024.
SELFTEST_NAMES_1K := nicoff_barrier1k_test
SELFTEST_BINS := $(addprefix $(SELFTEST_DIR)/,$(SELFTEST_NAMES) $(SELFTEST_NAMES_NODEBUG) \
	$(SELFTEST_NAMES_1K))
SELFTEST_UTIL_OBJ := $(SELFTEST_DIR)/nicoff_util.o $(SELFTEST_DIR)/nicoff_nl.o
SELFTEST_DEPS := $(TOP)/selftests/nicoff_util.h $(TOP)/selftests/nicoff_nl.h \
	$(TOP)/include/uapi/nicoff.h \
	$(LIBNICOFF_DIR)/include/nicoff/prep.h
# The harness header has unused parameters and its macros compare mixed
# signedness by design (as the kernel's own selftests build it).
SELFTEST_CFLAGS := $(CFLAGS_USER) -Wno-unused-parameter -Wno-sign-compare \
	-I$(KSFT_DIR) -I$(TOP)/selftests $(LIBNICOFF_CPPFLAGS)
SELFTEST_LDLIBS := -lpthread

USER_TARGETS += $(SELFTEST_BINS)

$(SELFTEST_UTIL_OBJ): $(SELFTEST_DIR)/%.o: $(TOP)/selftests/%.c $(SELFTEST_DEPS) | $(LIBNICOFF_ABI_H)
	@mkdir -p $(@D)
	$(CC) $(SELFTEST_CFLAGS) -c -o $@ $<

# The remote-atomic tests share a header of helpers; the lock test drives
# libnicoff's locks through its C API, linked statically.
$(SELFTEST_DIR)/nicoff_atomic_test $(SELFTEST_DIR)/nicoff_lock_test: \
	$(TOP)/selftests/nicoff_atomic_util.h
# The lock and host-barrier tests drive libnicoff through its C API.
SELFTEST_LIBNICOFF := $(SELFTEST_DIR)/nicoff_lock_test $(SELFTEST_DIR)/nicoff_hostbarrier_test
$(SELFTEST_LIBNICOFF): $(LIBNICOFF_STATIC)
$(SELFTEST_LIBNICOFF): SELFTEST_LDLIBS += $(LIBNICOFF_STATIC) $(LIBNICOFF_PRIVATE_LIBS) -lstdc++

$(SELFTEST_BINS): $(SELFTEST_DIR)/%: $(TOP)/selftests/%.c $(SELFTEST_UTIL_OBJ) \
		$(SELFTEST_DEPS) $(KSFT_STAMP) | $(LIBNICOFF_ABI_H)
	@mkdir -p $(@D)
	$(CC) $(SELFTEST_CFLAGS) -o $@ $< $(SELFTEST_UTIL_OBJ) $(SELFTEST_LDLIBS)

.PHONY: selftests-vm
selftests: $(SELFTEST_BINS)

selftests-vm: module $(SELFTEST_BINS)
	BUILD=$(BUILD) KERNEL=$(VMLINUZ) $(TOP)/selftests/run-in-vm.sh
