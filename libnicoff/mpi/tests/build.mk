# libnicoff/mpi/tests/build.mk - MPI test programs (C, built with MPICH's
# compiler wrapper), run in the VM by tools/mpi-tests.sh under mpiexec, with
# and without the PMPI library (libnicoff-mpi).  Built by `make` only where
# mpicc.mpich exists (`make deps` installs it).
#
#   make mpi-tests       build them into $(BUILD)/mpi-tests/
#   make mpi-tests-vm    build the module and them, run them in one VM boot

NICOFF_MPI_TESTS_DIR := $(BUILD)/mpi-tests
NICOFF_MPI_TESTS_SRC := $(TOP)/libnicoff/mpi/tests
NICOFF_MPICC ?= $(shell command -v mpicc.mpich 2>/dev/null)
NICOFF_MPI_TEST_NAMES := mpi_barrier_safety mpi_split mpi_many mpi_bcast mpi_kill
NICOFF_MPI_TEST_BINS := $(addprefix $(NICOFF_MPI_TESTS_DIR)/,$(NICOFF_MPI_TEST_NAMES))

.PHONY: mpi-tests mpi-tests-vm
ifneq ($(NICOFF_MPICC),)
USER_TARGETS += $(NICOFF_MPI_TEST_BINS)

$(NICOFF_MPI_TEST_BINS): $(NICOFF_MPI_TESTS_DIR)/%: $(NICOFF_MPI_TESTS_SRC)/%.c \
		$(NICOFF_MPI_TESTS_SRC)/mpi_test.h
	@mkdir -p $(@D)
	$(NICOFF_MPICC) -std=gnu11 $(OPT) $(WARN_C) -o $@ $<

mpi-tests: $(NICOFF_MPI_TEST_BINS)

mpi-tests-vm: module $(NICOFF_MPI_TEST_BINS)
	BUILD=$(BUILD) KERNEL=$(VMLINUZ) $(TOP)/tools/mpi-tests.sh
else
mpi-tests mpi-tests-vm:
	@echo "mpicc.mpich not found: run 'make deps' (packages mpich, libmpich-dev)"; exit 1
endif
