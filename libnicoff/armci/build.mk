# libnicoff/armci/build.mk - libarmci-nicoff, ARMCI on the card.
#
# Included by the top-level Makefile after libnicoff/build.mk.  Built
# against MPICH (pkg-config mpich) and Debian's ARMCI-MPI headers
# (/usr/include/armci.h, message.h from libarmci-mpi-dev), whose ABI it
# implements, as build/lib/libarmci-nicoff.so.0; a machine without either
# builds nothing and says why.  A program links with
#   mpicc.mpich prog.c -Lbuild/lib -larmci-nicoff -lnicoff
# Names defined here start with NICOFF_ARMCI_; it appends to USER_TARGETS
# and UNIT_TESTS.

NICOFF_ARMCI_DIR := $(TOP)/libnicoff/armci
NICOFF_ARMCI_OBJDIR := $(BUILD)/obj/libarmci-nicoff
# Debian's ARMCI-MPI header, whose presence the build needs.
NICOFF_ARMCI_H ?= /usr/include/armci.h
NICOFF_ARMCI_SONAME := libarmci-nicoff.so.0
NICOFF_ARMCI_LIB := $(BUILD)/lib/$(NICOFF_ARMCI_SONAME)
NICOFF_ARMCI_LINK := $(BUILD)/lib/libarmci-nicoff.so
# The parts without MPI or a card, which the host unit test links too.
NICOFF_ARMCI_PURE := config shape directory bounce
NICOFF_ARMCI_SRCS := $(wildcard $(NICOFF_ARMCI_DIR)/src/*.cpp)
NICOFF_ARMCI_OBJS := $(patsubst $(NICOFF_ARMCI_DIR)/src/%.cpp,$(NICOFF_ARMCI_OBJDIR)/%.o,$(NICOFF_ARMCI_SRCS))
NICOFF_ARMCI_MISSING := $(strip \
	$(if $(shell pkg-config --exists mpich 2>/dev/null && echo y),,MPICH (pkg-config mpich)) \
	$(if $(wildcard $(NICOFF_ARMCI_H)),,libarmci-mpi-dev ($(NICOFF_ARMCI_H))))

ifeq ($(NICOFF_ARMCI_MISSING),)
NICOFF_ARMCI_MPI_CFLAGS := $(shell pkg-config --cflags mpich)
NICOFF_ARMCI_MPI_LIBS := $(filter -L% -lmpi%,$(shell pkg-config --libs mpich))

$(NICOFF_ARMCI_OBJS): $(NICOFF_ARMCI_OBJDIR)/%.o: $(NICOFF_ARMCI_DIR)/src/%.cpp | $(LIBNICOFF_ABI_H)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_USER) $(LIBNICOFF_CPPFLAGS) $(NICOFF_ARMCI_MPI_CFLAGS) -DMPICH_SKIP_MPICXX \
		-fvisibility=hidden -fvisibility-inlines-hidden $(LIBNICOFF_DEPFLAGS) -c -o $@ $<

$(NICOFF_ARMCI_LIB): $(NICOFF_ARMCI_OBJS) $(LIBNICOFF_LINKS)
	@mkdir -p $(@D)
	$(CXX) -shared -Wl,-soname,$(NICOFF_ARMCI_SONAME) -Wl,-z,defs -Wl,--as-needed \
		-Wl,-rpath,'$$ORIGIN' -o $@ $(NICOFF_ARMCI_OBJS) $(LIBNICOFF_LDLIBS) $(NICOFF_ARMCI_MPI_LIBS)

$(NICOFF_ARMCI_LINK): $(NICOFF_ARMCI_LIB)
	ln -sf $(NICOFF_ARMCI_SONAME) $@

USER_TARGETS += $(NICOFF_ARMCI_LIB) $(NICOFF_ARMCI_LINK)
NICOFF_ARMCI_LIBS := $(NICOFF_ARMCI_LIB) $(NICOFF_ARMCI_LINK)

# The host unit test of the pure parts (cmocka, no MPI).
NICOFF_ARMCI_UNIT := $(BUILD)/tests/unit/armci-pure
NICOFF_ARMCI_UNIT_OBJ := $(NICOFF_ARMCI_OBJDIR)/unit/test_pure.o
$(NICOFF_ARMCI_UNIT_OBJ): $(NICOFF_ARMCI_DIR)/unit/test_pure.cpp | $(LIBNICOFF_ABI_H)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_USER) $(LIBNICOFF_CPPFLAGS) -I$(NICOFF_ARMCI_DIR)/src \
		-I$(LIBNICOFF_DIR)/tests/unit $(LIBNICOFF_DEPFLAGS) -c -o $@ $<
$(NICOFF_ARMCI_UNIT): $(NICOFF_ARMCI_UNIT_OBJ) \
		$(patsubst %,$(NICOFF_ARMCI_OBJDIR)/%.o,$(NICOFF_ARMCI_PURE)) $(LIBNICOFF_STATIC)
	@mkdir -p $(@D)
	$(CXX) -o $@ $(filter %.o,$^) $(LIBNICOFF_STATIC) $(LIBNICOFF_PRIVATE_LIBS) -lcmocka
UNIT_TESTS += $(NICOFF_ARMCI_UNIT)

-include $(NICOFF_ARMCI_OBJS:.o=.d) $(NICOFF_ARMCI_UNIT_OBJ:.o=.d)
else
NICOFF_ARMCI_LIBS :=
$(info libarmci-nicoff not built: $(NICOFF_ARMCI_MISSING) missing)
endif
