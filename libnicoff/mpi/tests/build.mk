# libnicoff/mpi/tests/build.mk - MPI test programs (C, built with MPICH's
# compiler wrapper), run in the VM by tools/mpi-tests.sh under mpiexec, with
# and without the PMPI library (libnicoff-mpi).  Built by `make` only where
# mpicc.mpich exists (`make deps` installs it).
#
#   make mpi-tests       build them into $(BUILD)/mpi-tests/
#   make mpi-tests-vm    build the module and them, run them in one VM boot
#   make mpi-tests-openmpi  build them with mpicc.openmpi into
#                        $(BUILD)/mpi-tests-openmpi/ (not by `make`), for
#                        MPI_TESTS_OPENMPI=1 tools/mpi-tests.sh

NICOFF_MPI_TESTS_DIR := $(BUILD)/mpi-tests
NICOFF_MPI_TESTS_SRC := $(TOP)/libnicoff/mpi/tests
NICOFF_MPICC ?= $(shell command -v mpicc.mpich 2>/dev/null)
NICOFF_MPI_TEST_NAMES := mpi_barrier_safety mpi_split mpi_many mpi_bcast mpi_kill mpi_passthru
NICOFF_MPI_TEST_BINS := $(addprefix $(NICOFF_MPI_TESTS_DIR)/,$(NICOFF_MPI_TEST_NAMES))

NICOFF_MPICC_OPENMPI ?= $(shell command -v mpicc.openmpi 2>/dev/null)
NICOFF_MPI_TEST_OMPI_BINS := $(addprefix $(NICOFF_MPI_TESTS_DIR)-openmpi/,$(NICOFF_MPI_TEST_NAMES))

# The programs, built into the directory $(1) with the compiler wrapper $(2).
define NICOFF_MPI_TESTS_RULE
$$(addprefix $(1)/,$$(NICOFF_MPI_TEST_NAMES)): $(1)/%: $$(NICOFF_MPI_TESTS_SRC)/%.c \
		$$(NICOFF_MPI_TESTS_SRC)/mpi_test.h
	@mkdir -p $$(@D)
	$(2) -std=gnu11 $$(OPT) $$(WARN_C) -o $$@ $$<
endef

.PHONY: mpi-tests mpi-tests-vm mpi-tests-openmpi
ifneq ($(NICOFF_MPICC_OPENMPI),)
$(eval $(call NICOFF_MPI_TESTS_RULE,$(NICOFF_MPI_TESTS_DIR)-openmpi,$(NICOFF_MPICC_OPENMPI)))
mpi-tests-openmpi: $(NICOFF_MPI_TEST_OMPI_BINS)
else
mpi-tests-openmpi:
	@echo "mpicc.openmpi not found: apt-get install libopenmpi-dev openmpi-bin"; exit 1
endif

# mpi_job: a native program on libnicoff's C API, which may call MPI too
# (the job's agreement under Hydra, with and without MPICH's PMI client).
NICOFF_MPI_JOB_BIN := $(NICOFF_MPI_TESTS_DIR)/mpi_job

ifneq ($(NICOFF_MPICC),)
USER_TARGETS += $(NICOFF_MPI_TEST_BINS) $(NICOFF_MPI_JOB_BIN)
$(eval $(call NICOFF_MPI_TESTS_RULE,$(NICOFF_MPI_TESTS_DIR),$(NICOFF_MPICC)))

$(NICOFF_MPI_JOB_BIN): $(NICOFF_MPI_TESTS_SRC)/mpi_job.c $(LIBNICOFF_LINKS) | $(LIBNICOFF_ABI_H)
	@mkdir -p $(@D)
	$(NICOFF_MPICC) -std=gnu11 $(OPT) $(WARN_C) $(LIBNICOFF_CPPFLAGS) $(LIBNICOFF_BIN_RPATH) \
		-o $@ $< $(LIBNICOFF_LDLIBS)

mpi-tests: $(NICOFF_MPI_TEST_BINS) $(NICOFF_MPI_JOB_BIN)

mpi-tests-vm: module $(NICOFF_MPI_TEST_BINS) $(NICOFF_MPI_JOB_BIN)
	BUILD=$(BUILD) KERNEL=$(VMLINUZ) $(TOP)/tools/mpi-tests.sh
else
mpi-tests mpi-tests-vm:
	@echo "mpicc.mpich not found: run 'make deps' (packages mpich, libmpich-dev)"; exit 1
endif
