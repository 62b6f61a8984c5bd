# libnicoff/build.mk - the user library, its tools and its unit tests.
#
# Included by the top-level Makefile, which defines TOP, BUILD, CC, CXX, AR,
# CFLAGS_USER and CXXFLAGS_USER.  Every name defined here starts with
# LIBNICOFF_ or NICOFF_, except the shared lists this file appends to:
# USER_TARGETS, TOOL_BINS, VM_BINS and UNIT_TESTS.
#
# Other parts of the tree that build against the library use
#   $(LIBNICOFF_CPPFLAGS)   include path for <nicoff/nicoff.h(pp)>
#   $(LIBNICOFF_ABI_H)      order-only prerequisite of their objects (it
#                           brings the generated <nicoff/version.h> too)
#   $(LIBNICOFF_LDLIBS)     link against build/lib/libnicoff.so
#   $(LIBNICOFF_LINKS)      prerequisite of their link step

NICOFF_VERSION := 0.1.0
# The one version string the library and every tool's --version print.
NICOFF_VERSION_CPPFLAGS := -DNICOFF_VERSION_STRING='"$(NICOFF_VERSION)"'
LIBNICOFF_SONAME := libnicoff.so.0
LIBNICOFF_SONAME_FULL := libnicoff.so.$(NICOFF_VERSION)

LIBNICOFF_DIR := $(TOP)/libnicoff
LIBNICOFF_OBJDIR := $(BUILD)/obj/libnicoff
LIBNICOFF_PUBLIC_HEADERS := $(LIBNICOFF_DIR)/include/nicoff/nicoff.h \
	$(LIBNICOFF_DIR)/include/nicoff/nicoff.hpp $(LIBNICOFF_DIR)/include/nicoff/job.hpp \
	$(LIBNICOFF_DIR)/include/nicoff/group.hpp $(LIBNICOFF_DIR)/include/nicoff/atomic.hpp \
	$(LIBNICOFF_DIR)/include/nicoff/strided.hpp $(LIBNICOFF_DIR)/include/nicoff/prep.h

# The public headers include <nicoff/nicoff_abi.h>, the name under which
# `make install` installs include/uapi/nicoff.h; the build tree gets a copy
# under that name too.
LIBNICOFF_ABI_H := $(BUILD)/include/nicoff/nicoff_abi.h
LIBNICOFF_CPPFLAGS := -I$(BUILD)/include -I$(LIBNICOFF_DIR)/include
# <nicoff/version.h>: NICOFF_VERSION split into numbers, generated so that
# the version stays defined once (here).
LIBNICOFF_VERSION_H := $(BUILD)/include/nicoff/version.h
# C API symbols carry this version script's node (see libnicoff(3)).
LIBNICOFF_MAP := $(LIBNICOFF_DIR)/libnicoff.map

LIBNICOFF_SHARED := $(BUILD)/lib/$(LIBNICOFF_SONAME_FULL)
LIBNICOFF_STATIC := $(BUILD)/lib/libnicoff.a
LIBNICOFF_LINKS := $(BUILD)/lib/$(LIBNICOFF_SONAME) $(BUILD)/lib/libnicoff.so
LIBNICOFF_LDLIBS := -L$(BUILD)/lib -lnicoff -pthread
# What the static library needs besides itself (RegionMap: liburcu-bp).
LIBNICOFF_PRIVATE_LIBS := -lurcu-bp -lurcu-cds -lurcu-common -pthread

LIBNICOFF_BIN_RPATH := -Wl,-rpath,'$$ORIGIN/../lib'
LIBNICOFF_DEPFLAGS = -MMD -MP -MF $(@:.o=.d)

# ---------------------------------------------------------------- library --
LIBNICOFF_LIB_SRCS := $(addprefix $(LIBNICOFF_DIR)/src/, \
	capi.cpp capi_strided.cpp debug.cpp device.cpp job.cpp job_pmi.cpp pmi.cpp memory_region.cpp \
	names.cpp port.cpp region_map.cpp shared_port.cpp group.cpp atomic.cpp lock.cpp dispatch.cpp \
	strided.cpp strided_model.cpp strided_methods.cpp)
# The card's barrier schedules, built from the firmware's own source
# (src/barrier_sched.c is its door; firmware-sim/host gives it fw_compat.h).
LIBNICOFF_FW_SRCS := $(TOP)/firmware-sim/barrier_alg.c
LIBNICOFF_LIB_C_SRCS := $(LIBNICOFF_DIR)/src/barrier_sched.c
LIBNICOFF_FW_OBJS := $(patsubst $(TOP)/firmware-sim/%.c,$(LIBNICOFF_OBJDIR)/fw/%.o,$(LIBNICOFF_FW_SRCS))
LIBNICOFF_LIB_OBJS := $(patsubst $(LIBNICOFF_DIR)/%.cpp,$(LIBNICOFF_OBJDIR)/%.o,$(LIBNICOFF_LIB_SRCS)) \
	$(patsubst $(LIBNICOFF_DIR)/%.c,$(LIBNICOFF_OBJDIR)/%.o,$(LIBNICOFF_LIB_C_SRCS)) \
	$(LIBNICOFF_FW_OBJS)
LIBNICOFF_FW_CPPFLAGS := -I$(TOP)/firmware-sim/host -I$(TOP)/firmware-sim -I$(TOP)/include

# nicoff_lists.h, which the ABI header includes, goes next to it.
$(LIBNICOFF_ABI_H): $(TOP)/include/uapi/nicoff.h $(TOP)/include/uapi/nicoff_lists.h \
		| $(LIBNICOFF_VERSION_H)
	@mkdir -p $(@D)
	cp $(TOP)/include/uapi/nicoff_lists.h $(@D)/
	cp $< $@

LIBNICOFF_VERSION_PARTS := $(subst ., ,$(NICOFF_VERSION))
$(LIBNICOFF_VERSION_H): $(LIBNICOFF_DIR)/include/nicoff/version.h.in $(LIBNICOFF_DIR)/build.mk
	@mkdir -p $(@D)
	sed -e 's|@MAJOR@|$(word 1,$(LIBNICOFF_VERSION_PARTS))|' \
	    -e 's|@MINOR@|$(word 2,$(LIBNICOFF_VERSION_PARTS))|' \
	    -e 's|@PATCH@|$(word 3,$(LIBNICOFF_VERSION_PARTS))|' \
	    -e 's|@VERSION@|$(NICOFF_VERSION)|' $< > $@

$(filter %.o,$(patsubst $(LIBNICOFF_DIR)/%.cpp,$(LIBNICOFF_OBJDIR)/%.o,$(LIBNICOFF_LIB_SRCS))): \
		$(LIBNICOFF_OBJDIR)/%.o: $(LIBNICOFF_DIR)/%.cpp | $(LIBNICOFF_ABI_H)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_USER) $(LIBNICOFF_CPPFLAGS) -fvisibility=hidden \
		-fvisibility-inlines-hidden -DNICOFF_BUILDING_LIB \
		$(NICOFF_VERSION_CPPFLAGS) $(LIBNICOFF_DEPFLAGS) -c -o $@ $<

$(LIBNICOFF_OBJDIR)/src/%.o: $(LIBNICOFF_DIR)/src/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) $(LIBNICOFF_FW_CPPFLAGS) -fvisibility=hidden $(LIBNICOFF_DEPFLAGS) \
		-c -o $@ $<

$(LIBNICOFF_FW_OBJS): $(LIBNICOFF_OBJDIR)/fw/%.o: $(TOP)/firmware-sim/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) $(LIBNICOFF_FW_CPPFLAGS) -fvisibility=hidden $(LIBNICOFF_DEPFLAGS) \
		-c -o $@ $<

$(LIBNICOFF_SHARED): $(LIBNICOFF_LIB_OBJS) $(LIBNICOFF_MAP)
	@mkdir -p $(@D)
	$(CXX) -shared -Wl,-soname,$(LIBNICOFF_SONAME) -Wl,-z,defs -Wl,--as-needed \
		-Wl,--version-script,$(LIBNICOFF_MAP) -o $@ $(LIBNICOFF_LIB_OBJS) $(LIBNICOFF_PRIVATE_LIBS)

$(BUILD)/lib/$(LIBNICOFF_SONAME): $(LIBNICOFF_SHARED)
	ln -sf $(LIBNICOFF_SONAME_FULL) $@

$(BUILD)/lib/libnicoff.so: $(BUILD)/lib/$(LIBNICOFF_SONAME)
	ln -sf $(LIBNICOFF_SONAME) $@

$(LIBNICOFF_STATIC): $(LIBNICOFF_LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $(LIBNICOFF_LIB_OBJS)

# ------------------------------------------------------------------ tools --
# Every .cpp in tools/bench/ is part of nicoff-bench: a new suite is a new
# file there (see tools/bench/bench.hpp).
LIBNICOFF_BENCH_SRCS := $(sort $(wildcard $(LIBNICOFF_DIR)/tools/bench/*.cpp))
LIBNICOFF_SMOKE_SRCS := $(LIBNICOFF_DIR)/tools/smoke/smoke.cpp
LIBNICOFF_DEMO_SRCS := $(sort $(wildcard $(LIBNICOFF_DIR)/tools/demo/*.cpp))
LIBNICOFF_RUN_SRCS := $(LIBNICOFF_DIR)/tools/nicoffrun/nicoffrun.cpp
LIBNICOFF_TOOL_OBJS := \
	$(patsubst $(LIBNICOFF_DIR)/%.cpp,$(LIBNICOFF_OBJDIR)/%.o,$(LIBNICOFF_BENCH_SRCS)) \
	$(patsubst $(LIBNICOFF_DIR)/%.cpp,$(LIBNICOFF_OBJDIR)/%.o,$(LIBNICOFF_SMOKE_SRCS)) \
	$(patsubst $(LIBNICOFF_DIR)/%.cpp,$(LIBNICOFF_OBJDIR)/%.o,$(LIBNICOFF_DEMO_SRCS)) \
	$(patsubst $(LIBNICOFF_DIR)/%.cpp,$(LIBNICOFF_OBJDIR)/%.o,$(LIBNICOFF_RUN_SRCS))

$(LIBNICOFF_TOOL_OBJS): $(LIBNICOFF_OBJDIR)/%.o: $(LIBNICOFF_DIR)/%.cpp | $(LIBNICOFF_ABI_H)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_USER) $(LIBNICOFF_CPPFLAGS) $(NICOFF_VERSION_CPPFLAGS) $(LIBNICOFF_DEPFLAGS) \
		-c -o $@ $<

$(BUILD)/bin/nicoff-bench: $(filter $(LIBNICOFF_OBJDIR)/tools/bench/%,$(LIBNICOFF_TOOL_OBJS)) \
		$(LIBNICOFF_LINKS)
	@mkdir -p $(@D)
	$(CXX) -o $@ $(filter %.o,$^) $(LIBNICOFF_BIN_RPATH) $(LIBNICOFF_LDLIBS)

$(BUILD)/bin/nicoff-smoke: $(filter $(LIBNICOFF_OBJDIR)/tools/smoke/%,$(LIBNICOFF_TOOL_OBJS)) \
		$(LIBNICOFF_LINKS)
	@mkdir -p $(@D)
	$(CXX) -o $@ $(filter %.o,$^) $(LIBNICOFF_BIN_RPATH) $(LIBNICOFF_LDLIBS)

# nicoffctl talks netlink through libnl and prints JSON with nlohmann-json
# (header-only).
LIBNICOFF_NL_CFLAGS := $(shell pkg-config --cflags libnl-genl-3.0 2>/dev/null)
LIBNICOFF_NL_LIBS := $(shell pkg-config --libs libnl-genl-3.0 2>/dev/null)
LIBNICOFF_CTL_OBJ := $(LIBNICOFF_OBJDIR)/tools/nicoffctl/nicoffctl.o

$(LIBNICOFF_CTL_OBJ): $(LIBNICOFF_DIR)/tools/nicoffctl/nicoffctl.cpp | $(LIBNICOFF_ABI_H)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_USER) $(LIBNICOFF_CPPFLAGS) $(LIBNICOFF_NL_CFLAGS) $(NICOFF_VERSION_CPPFLAGS) \
		$(LIBNICOFF_DEPFLAGS) -c -o $@ $<

$(BUILD)/bin/nicoffctl: $(LIBNICOFF_CTL_OBJ)
	@mkdir -p $(@D)
	$(CXX) -o $@ $< $(LIBNICOFF_NL_LIBS)

$(BUILD)/bin/nicoff-demo: $(filter $(LIBNICOFF_OBJDIR)/tools/demo/%,$(LIBNICOFF_TOOL_OBJS)) \
		$(LIBNICOFF_LINKS)
	@mkdir -p $(@D)
	$(CXX) -o $@ $(filter %.o,$^) $(LIBNICOFF_BIN_RPATH) $(LIBNICOFF_LDLIBS)

# nicoffrun: the job launcher (runs on the host too: tests/unit/test_nicoffrun.cpp).
$(BUILD)/bin/nicoffrun: $(filter $(LIBNICOFF_OBJDIR)/tools/nicoffrun/%,$(LIBNICOFF_TOOL_OBJS)) \
		$(LIBNICOFF_LINKS)
	@mkdir -p $(@D)
	$(CXX) -o $@ $(filter %.o,$^) $(LIBNICOFF_BIN_RPATH) $(LIBNICOFF_LDLIBS)

# ------------------------------------------------------------- unit tests --
# cmocka programs linked with the static library (they may use its
# internal headers, e.g. src/ring.hpp); test_capi.c is strict C11.
LIBNICOFF_UNIT_DIR := $(BUILD)/tests/unit
LIBNICOFF_UNIT_CXX_SRCS := $(addprefix $(LIBNICOFF_DIR)/tests/unit/, \
	test_ring.cpp test_ringpair.cpp test_regionmap.cpp test_bench.cpp test_job.cpp \
	test_nicoffrun.cpp test_lock.cpp test_group.cpp test_dispatch.cpp test_strided.cpp test_pmi.cpp)
LIBNICOFF_UNIT_C_SRCS := $(addprefix $(LIBNICOFF_DIR)/tests/unit/, test_capi.c test_diag.c)
LIBNICOFF_UNIT_CXX_OBJS := $(patsubst $(LIBNICOFF_DIR)/%.cpp,$(LIBNICOFF_OBJDIR)/%.o,$(LIBNICOFF_UNIT_CXX_SRCS))
LIBNICOFF_UNIT_C_OBJS := $(patsubst $(LIBNICOFF_DIR)/%.c,$(LIBNICOFF_OBJDIR)/%.o,$(LIBNICOFF_UNIT_C_SRCS))
LIBNICOFF_UNIT_BINS := $(patsubst $(LIBNICOFF_OBJDIR)/tests/unit/test_%.o,$(LIBNICOFF_UNIT_DIR)/libnicoff-%, \
	$(LIBNICOFF_UNIT_CXX_OBJS) $(LIBNICOFF_UNIT_C_OBJS))

$(LIBNICOFF_UNIT_CXX_OBJS): $(LIBNICOFF_OBJDIR)/%.o: $(LIBNICOFF_DIR)/%.cpp | $(LIBNICOFF_ABI_H)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_USER) $(LIBNICOFF_CPPFLAGS) -I$(LIBNICOFF_DIR)/src \
		-I$(LIBNICOFF_DIR)/tools/bench $(LIBNICOFF_DEPFLAGS) -c -o $@ $<

$(LIBNICOFF_UNIT_C_OBJS): $(LIBNICOFF_OBJDIR)/%.o: $(LIBNICOFF_DIR)/%.c | $(LIBNICOFF_ABI_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) -std=c11 -Wpedantic $(LIBNICOFF_CPPFLAGS) \
		$(LIBNICOFF_DEPFLAGS) -c -o $@ $<

$(LIBNICOFF_UNIT_BINS): $(LIBNICOFF_UNIT_DIR)/libnicoff-%: $(LIBNICOFF_OBJDIR)/tests/unit/test_%.o \
		$(LIBNICOFF_STATIC)
	@mkdir -p $(@D)
	$(CXX) -o $@ $(filter %.o,$^) $(LIBNICOFF_STATIC) $(LIBNICOFF_PRIVATE_LIBS) -lcmocka

# The bench framework's own test links the framework's objects.
$(LIBNICOFF_UNIT_DIR)/libnicoff-bench: $(LIBNICOFF_OBJDIR)/tools/bench/framework.o \
	$(LIBNICOFF_OBJDIR)/tools/bench/procstat.o $(LIBNICOFF_OBJDIR)/tools/bench/tunable.o \
	$(LIBNICOFF_OBJDIR)/tools/bench/collective.o \
	$(LIBNICOFF_OBJDIR)/tools/bench/shmbarrier.o

# The launcher's test runs build/bin/nicoffrun (or $$NICOFFRUN when set).
$(LIBNICOFF_OBJDIR)/tests/unit/test_nicoffrun.o: \
	CXXFLAGS_USER += -DNICOFFRUN_PATH='"$(BUILD)/bin/nicoffrun"'
$(LIBNICOFF_UNIT_DIR)/libnicoff-nicoffrun: $(BUILD)/bin/nicoffrun

# Build and run only this library's unit tests.
.PHONY: libnicoff-unit
libnicoff-unit: $(LIBNICOFF_UNIT_BINS)
	@set -e; for t in $(LIBNICOFF_UNIT_BINS); do echo "== $$t"; $$t; done

# ------------------------------------------------------------------ lists --
USER_TARGETS += $(LIBNICOFF_SHARED) $(LIBNICOFF_LINKS) $(LIBNICOFF_STATIC) \
	$(BUILD)/bin/nicoff-bench $(BUILD)/bin/nicoff-smoke $(BUILD)/bin/nicoff-demo \
	$(BUILD)/bin/nicoffctl $(BUILD)/bin/nicoffrun
TOOL_BINS += $(BUILD)/bin/nicoff-bench $(BUILD)/bin/nicoff-demo $(BUILD)/bin/nicoffctl \
	$(BUILD)/bin/nicoffrun
VM_BINS += $(BUILD)/bin/nicoff-bench $(BUILD)/bin/nicoff-smoke $(BUILD)/bin/nicoff-demo \
	$(BUILD)/bin/nicoffctl $(BUILD)/bin/nicoffrun
UNIT_TESTS += $(LIBNICOFF_UNIT_BINS)

-include $(wildcard $(LIBNICOFF_OBJDIR)/*/*.d $(LIBNICOFF_OBJDIR)/*/*/*.d)
