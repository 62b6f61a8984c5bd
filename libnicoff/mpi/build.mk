# libnicoff/mpi/build.mk - libnicoff-mpi, the PMPI interposition library.
#
# Included by the top-level Makefile after libnicoff/build.mk.  The library
# is built once per MPI flavour whose development files pkg-config finds
# (MPI_Comm and the other handles differ between MPICH and Open MPI), as
# build/lib/libnicoff-mpi-<flavour>.so; a machine without any builds none.
# Names defined here start with NICOFF_MPI_; it appends to USER_TARGETS.

NICOFF_MPI_DIR := $(TOP)/libnicoff/mpi
NICOFF_MPI_SRCS := $(addprefix $(NICOFF_MPI_DIR)/src/, config.cpp runtime.cpp pmpi.cpp fortran.cpp)
# flavour name = its pkg-config package
NICOFF_MPI_FLAVOURS := $(foreach f,mpich ompi-c,$(if $(shell pkg-config --exists $(f) \
	2>/dev/null && echo y),$(f)))
NICOFF_MPI_LIB_NAME = libnicoff-mpi-$(if $(filter ompi-c,$(1)),openmpi,$(1)).so
NICOFF_MPI_LIBS := $(foreach f,$(NICOFF_MPI_FLAVOURS),$(BUILD)/lib/$(call NICOFF_MPI_LIB_NAME,$(f)))

define NICOFF_MPI_FLAVOUR
NICOFF_MPI_OBJS_$(1) := $$(patsubst $$(NICOFF_MPI_DIR)/src/%.cpp,$$(BUILD)/obj/libnicoff-mpi/$(1)/%.o,$$(NICOFF_MPI_SRCS))
$$(NICOFF_MPI_OBJS_$(1)): $$(BUILD)/obj/libnicoff-mpi/$(1)/%.o: $$(NICOFF_MPI_DIR)/src/%.cpp | $$(LIBNICOFF_ABI_H)
	@mkdir -p $$(@D)
	$$(CXX) $$(CXXFLAGS_USER) $$(LIBNICOFF_CPPFLAGS) $$(shell pkg-config --cflags $(1)) -DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX \
		-fvisibility=hidden -fvisibility-inlines-hidden $$(LIBNICOFF_DEPFLAGS) -c -o $$@ $$<
$$(BUILD)/lib/$$(call NICOFF_MPI_LIB_NAME,$(1)): $$(NICOFF_MPI_OBJS_$(1)) $$(LIBNICOFF_LINKS)
	@mkdir -p $$(@D)
	$$(CXX) -shared -Wl,-z,defs -Wl,--as-needed -Wl,-rpath,'$$$$ORIGIN' -o $$@ \
		$$(NICOFF_MPI_OBJS_$(1)) $$(LIBNICOFF_LDLIBS) \
		$$(filter -L% -lmpi%,$$(shell pkg-config --libs $(1)))
-include $$(NICOFF_MPI_OBJS_$(1):.o=.d)
endef
$(foreach f,$(NICOFF_MPI_FLAVOURS),$(eval $(call NICOFF_MPI_FLAVOUR,$(f))))

USER_TARGETS += $(NICOFF_MPI_LIBS)

# nicoff-mpi-bench (the `mpi` benchmark's program, tools/mpi-bench.sh), once
# per flavour present: nicoff-mpi-bench with MPICH, nicoff-mpi-bench-openmpi
# with Open MPI.
NICOFF_MPI_BENCH_NAME = nicoff-mpi-bench$(if $(filter ompi-c,$(1)),-openmpi)
define NICOFF_MPI_BENCH_RULE
$$(BUILD)/bin/$$(call NICOFF_MPI_BENCH_NAME,$(1)): $$(NICOFF_MPI_DIR)/bench/mpi_bench.c $$(LIBNICOFF_LINKS) | $$(LIBNICOFF_ABI_H)
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS_USER) $$(LIBNICOFF_CPPFLAGS) $$(shell pkg-config --cflags $(1)) \
		$$(LIBNICOFF_BIN_RPATH) -o $$@ $$< $$(LIBNICOFF_LDLIBS) \
		$$(filter -L% -lmpi%,$$(shell pkg-config --libs $(1))) -ljson-c
USER_TARGETS += $$(BUILD)/bin/$$(call NICOFF_MPI_BENCH_NAME,$(1))
endef
$(foreach f,$(NICOFF_MPI_FLAVOURS),$(eval $(call NICOFF_MPI_BENCH_RULE,$(f))))
