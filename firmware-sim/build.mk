# firmware-sim/build.mk - the card firmware built for user space, its host
# (the simulator's fabric), the simulator nicoff-sim and their unit tests.
#
# Included by the top-level Makefile, which defines TOP, BUILD, CC, AR and
# CFLAGS_USER.  Every name defined here starts with FWSIM_, except the
# shared lists this file appends to: USER_TARGETS, TOOL_BINS and UNIT_TESTS.
#
# The firmware sources (firmware-sim/*.c) also build in the kernel, so they
# are held to its rules here: no VLAs, declarations first, small frames.

FWSIM_DIR := $(TOP)/firmware-sim
FWSIM_OBJDIR := $(BUILD)/obj/firmware-sim
FWSIM_CPPFLAGS := -I$(FWSIM_DIR)/host -I$(FWSIM_DIR) -I$(TOP)/include
FWSIM_KERNEL_WARN := -Wdeclaration-after-statement -Wvla -Wframe-larger-than=512 \
	-Wmissing-prototypes -Wstrict-prototypes -Wold-style-definition -Wshadow
FWSIM_DEPFLAGS = -MMD -MP -MF $(@:.o=.d)

FWSIM_LIB := $(BUILD)/lib/libnicoff-fw.a
FWSIM_HOST_LIB := $(BUILD)/lib/libnicoff-fwsim.a
FWSIM_SIM_LIB := $(BUILD)/lib/libnicoff-sim.a
FWSIM_SIM_BIN := $(BUILD)/bin/nicoff-sim

# ------------------------------------------------------------- firmware --
FWSIM_FW_SRCS := $(addprefix $(FWSIM_DIR)/, card.c engine.c peer.c transport.c msg.c rma.c strided.c \
	faults.c atomic.c barrier.c barrier_alg.c grouptab.c switch.c timer.c ping.c \
	bcast.c)
FWSIM_FW_OBJS := $(patsubst $(FWSIM_DIR)/%.c,$(FWSIM_OBJDIR)/%.o,$(FWSIM_FW_SRCS))

$(FWSIM_FW_OBJS): $(FWSIM_OBJDIR)/%.o: $(FWSIM_DIR)/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) $(FWSIM_KERNEL_WARN) $(FWSIM_CPPFLAGS) $(FWSIM_DEPFLAGS) -c -o $@ $<

$(FWSIM_LIB): $(FWSIM_FW_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

# ----------------------------------------------------------------- host --
FWSIM_HOST_SRCS := $(sort $(wildcard $(FWSIM_DIR)/host/*.c))
FWSIM_HOST_OBJS := $(patsubst $(FWSIM_DIR)/%.c,$(FWSIM_OBJDIR)/%.o,$(FWSIM_HOST_SRCS))

$(FWSIM_HOST_OBJS): $(FWSIM_OBJDIR)/%.o: $(FWSIM_DIR)/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) $(FWSIM_CPPFLAGS) $(FWSIM_DEPFLAGS) -c -o $@ $<

# The host and the firmware call each other: one link group.
FWSIM_LINK_HOST := -Wl,--start-group $(FWSIM_HOST_LIB) $(FWSIM_LIB) -Wl,--end-group -lisal

$(FWSIM_HOST_LIB): $(FWSIM_HOST_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

# ------------------------------------------------------------ simulator --
# sim/nsim.c (engine) and sim/wl_*.c (one file per workload) form a library
# that the unit tests link too; sim/main.c is the command line.
FWSIM_SIM_SRCS := $(filter-out $(FWSIM_DIR)/sim/main.c,$(sort $(wildcard $(FWSIM_DIR)/sim/*.c)))
FWSIM_SIM_OBJS := $(patsubst $(FWSIM_DIR)/%.c,$(FWSIM_OBJDIR)/%.o,$(FWSIM_SIM_SRCS))
FWSIM_SIM_MAIN := $(FWSIM_OBJDIR)/sim/main.o

# The command line writes its --json records with json-c, and prints the one
# nicoff version (NICOFF_VERSION_CPPFLAGS of
# libnicoff/build.mk, included after this file: expanded when the recipe runs).
$(FWSIM_SIM_MAIN): FWSIM_VERSION_CPPFLAGS = $(NICOFF_VERSION_CPPFLAGS)

$(FWSIM_SIM_OBJS) $(FWSIM_SIM_MAIN): $(FWSIM_OBJDIR)/%.o: $(FWSIM_DIR)/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) $(FWSIM_CPPFLAGS) $(FWSIM_VERSION_CPPFLAGS) -I$(FWSIM_DIR)/sim \
		$(FWSIM_DEPFLAGS) -c -o $@ $<

$(FWSIM_SIM_LIB): $(FWSIM_SIM_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(FWSIM_SIM_BIN): $(FWSIM_SIM_MAIN) $(FWSIM_SIM_LIB) $(FWSIM_HOST_LIB) $(FWSIM_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $< $(FWSIM_SIM_LIB) $(FWSIM_LINK_HOST) -ljson-c -lm

# ----------------------------------------------------------- unit tests --
# One cmocka program per tests/test_*.c, each linked with tests/fwtest.c,
# the simulator's library, the host and the firmware:
# build/tests/unit/fw-<name>.
FWSIM_UNIT_DIR := $(BUILD)/tests/unit
FWSIM_TEST_SRCS := $(sort $(wildcard $(FWSIM_DIR)/tests/test_*.c))
FWSIM_TEST_OBJS := $(patsubst $(FWSIM_DIR)/%.c,$(FWSIM_OBJDIR)/%.o,$(FWSIM_TEST_SRCS))
FWSIM_TEST_UTIL := $(FWSIM_OBJDIR)/tests/fwtest.o
FWSIM_UNIT_BINS := $(patsubst $(FWSIM_DIR)/tests/test_%.c,$(FWSIM_UNIT_DIR)/fw-%,$(FWSIM_TEST_SRCS))

$(FWSIM_TEST_OBJS) $(FWSIM_TEST_UTIL): $(FWSIM_OBJDIR)/%.o: $(FWSIM_DIR)/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) $(FWSIM_CPPFLAGS) -I$(FWSIM_DIR)/tests -I$(FWSIM_DIR)/sim \
		-DFWT_UNIT_TEST=CMUnitTest $(FWSIM_DEPFLAGS) -c -o $@ $<

$(FWSIM_UNIT_BINS): $(FWSIM_UNIT_DIR)/fw-%: $(FWSIM_OBJDIR)/tests/test_%.o $(FWSIM_TEST_UTIL) \
		$(FWSIM_SIM_LIB) $(FWSIM_HOST_LIB) $(FWSIM_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $< $(FWSIM_TEST_UTIL) $(FWSIM_SIM_LIB) $(FWSIM_LINK_HOST) -lcmocka

# Build and run only the firmware's unit tests.
.PHONY: fwsim-unit
fwsim-unit: $(FWSIM_UNIT_BINS)
	@set -e; for t in $(FWSIM_UNIT_BINS); do echo "== $$t"; $$t; done

# ---------------------------------------------------------------- lists --
USER_TARGETS += $(FWSIM_LIB) $(FWSIM_HOST_LIB) $(FWSIM_SIM_LIB) $(FWSIM_SIM_BIN) \
	$(FWSIM_UNIT_BINS)
TOOL_BINS += $(FWSIM_SIM_BIN)
UNIT_TESTS += $(FWSIM_UNIT_BINS)

-include $(wildcard $(FWSIM_OBJDIR)/*.d $(FWSIM_OBJDIR)/*/*.d)
