# selftests build: kernel selftests of nicoff.ko, written with the kselftest
# harness (kselftest_harness.h, extracted at build time into $(KSFT_DIR) by
# mk/cache.mk, never copied into the repo) against the raw ABI of
# include/uapi/nicoff.h, their commands built with libnicoff's header-only
# <nicoff/prep.h>.  They only run in the VM: selftests/run-in-vm.sh.
#
#   make selftests        build them into $(BUILD)/selftests/
#   make selftests-vm     build the module and them, run all in one VM boot
#   make -C selftests ... the kernel's way: run_tests, install (selftests/Makefile)

SELFTEST_DIR := $(BUILD)/selftests
include $(TOP)/selftests/tests.mk
SELFTEST_BINS := $(addprefix $(SELFTEST_DIR)/,$(SELFTEST_NAMES) $(SELFTEST_NAMES_NODEBUG) \
	$(SELFTEST_NAMES_1K))
SELFTEST_UTIL_OBJ := $(SELFTEST_DIR)/nicoff_util.o $(SELFTEST_DIR)/nicoff_nl.o
SELFTEST_DEPS := $(TOP)/selftests/nicoff_util.h $(TOP)/selftests/nicoff_nl.h \
	$(TOP)/include/uapi/nicoff.h $(TOP)/include/uapi/nicoff_lists.h \
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
# The lock, host-barrier and library broadcast tests drive libnicoff
# through its C API.
SELFTEST_LIBNICOFF := $(SELFTEST_DIR)/nicoff_lock_test $(SELFTEST_DIR)/nicoff_hostbarrier_test \
	$(SELFTEST_DIR)/nicoff_libbcast_test
$(SELFTEST_LIBNICOFF): $(LIBNICOFF_STATIC)
$(SELFTEST_LIBNICOFF): SELFTEST_LDLIBS += $(LIBNICOFF_STATIC) $(LIBNICOFF_PRIVATE_LIBS) -lstdc++

# The nicoffctl test parses the tool's JSON with json-c.
$(SELFTEST_DIR)/nicoff_ctl_test: SELFTEST_LDLIBS += -ljson-c

# The strided methods' test drives libnicoff's C++ API (kselftest.h's TAP,
# the harness being C only).
SELFTEST_CXX_BINS := $(SELFTEST_DIR)/nicoff_methods_test
$(SELFTEST_CXX_BINS): $(SELFTEST_DIR)/%: $(TOP)/selftests/%.cpp $(SELFTEST_UTIL_OBJ) \
		$(SELFTEST_DEPS) $(TOP)/selftests/nicoff_strided_ref.h $(LIBNICOFF_STATIC) \
		$(LIBNICOFF_PUBLIC_HEADERS) $(KSFT_STAMP) | $(LIBNICOFF_ABI_H)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_USER) -I$(KSFT_DIR) -I$(TOP)/selftests $(LIBNICOFF_CPPFLAGS) -o $@ $< \
		$(SELFTEST_UTIL_OBJ) $(LIBNICOFF_STATIC) $(LIBNICOFF_PRIVATE_LIBS)

$(filter-out $(SELFTEST_CXX_BINS),$(SELFTEST_BINS)): $(SELFTEST_DIR)/%: $(TOP)/selftests/%.c $(SELFTEST_UTIL_OBJ) \
		$(SELFTEST_DEPS) $(KSFT_STAMP) | $(LIBNICOFF_ABI_H)
	@mkdir -p $(@D)
	$(CC) $(SELFTEST_CFLAGS) -o $@ $< $(SELFTEST_UTIL_OBJ) $(SELFTEST_LDLIBS)

.PHONY: selftests-vm
selftests: $(SELFTEST_BINS)

selftests-vm: module $(SELFTEST_BINS)
	BUILD=$(BUILD) KERNEL=$(VMLINUZ) $(TOP)/selftests/run-in-vm.sh
