# libnicoff/armci/tests/build.mk - the ARMCI test programs, the Global Arrays
# program and the `armci` benchmark's program (C, MPICH's compiler wrapper),
# each built twice:
#   NAME-armci-mpi  linked with Debian's ARMCI-MPI (libarmci-mpich.a), the
#                   control
#   NAME-nicoff     linked with libarmci-nicoff (libnicoff/armci/build.mk)
# GA programs link Debian's GA (libga-mpich.a) over either.  The tests go to
# $(BUILD)/armci-tests/, the benchmark to $(BUILD)/bin/nicoff-armci-bench-*.
# Included after libnicoff/armci/build.mk: the -nicoff builds exist only
# when the library's target is among USER_TARGETS.
#
#   make armci-tests        build them and the module, run them in one VM boot
#                           (tools/armci-tests.sh)
#   make armci-tests-build  build them only

NICOFF_ARMCIT_SRC := $(TOP)/libnicoff/armci/tests
NICOFF_ARMCIT_DIR := $(BUILD)/armci-tests
NICOFF_ARMCIT_NAMES := armci_strided armci_vector armci_rmw armci_nb armci_mutex armci_calls
NICOFF_ARMCIT_GA_NAMES := ga_matmul
NICOFF_ARMCIT_BENCH := $(BUILD)/bin/nicoff-armci-bench
# The library of the -nicoff builds, a target of libnicoff/armci/build.mk.
NICOFF_ARMCIT_NICOFF_LIB ?= $(BUILD)/lib/libarmci-nicoff.so
NICOFF_ARMCIT_MPICC := $(shell command -v mpicc.mpich 2>/dev/null)

# Debian's static ARMCI-MPI and GA for MPICH, and what GA's objects call:
# ScaLAPACK, LAPACK, BLAS, gfortran's runtime (ga-config describes the
# default MPI's build, Open MPI's, so the MPICH names are spelt out).
NICOFF_ARMCIT_MPI_LIBS := -larmci-mpich
NICOFF_ARMCIT_GA_PRE := -lga-mpich
NICOFF_ARMCIT_GA_POST := -lscalapack-mpich -llapack -lblas -lgfortran -lm
NICOFF_ARMCIT_NICOFF_LIBS := -L$(BUILD)/lib -larmci-nicoff -lnicoff $(LIBNICOFF_BIN_RPATH)
NICOFF_ARMCIT_MISSING := $(strip \
	$(if $(NICOFF_ARMCIT_MPICC),,mpicc.mpich (mpich, libmpich-dev)) \
	$(if $(wildcard /usr/include/armci.h),,libarmci-mpi-dev) \
	$(if $(NICOFF_ARMCIT_MPICC),$(foreach l,ga-mpich scalapack-mpich, \
		$(if $(filter /%,$(shell $(NICOFF_ARMCIT_MPICC) -print-file-name=lib$(l).so) \
		$(shell $(NICOFF_ARMCIT_MPICC) -print-file-name=lib$(l).a)),,lib$(l)))))
NICOFF_ARMCIT_HAVE_NICOFF := $(filter $(NICOFF_ARMCIT_NICOFF_LIB),$(USER_TARGETS))

NICOFF_ARMCIT_BINS_armci-mpi := \
	$(foreach p,$(NICOFF_ARMCIT_NAMES) $(NICOFF_ARMCIT_GA_NAMES),$(NICOFF_ARMCIT_DIR)/$(p)-armci-mpi) \
	$(NICOFF_ARMCIT_BENCH)-armci-mpi
NICOFF_ARMCIT_BINS_nicoff := \
	$(foreach p,$(NICOFF_ARMCIT_NAMES) $(NICOFF_ARMCIT_GA_NAMES),$(NICOFF_ARMCIT_DIR)/$(p)-nicoff) \
	$(NICOFF_ARMCIT_BENCH)-nicoff

# The programs of one flavour: $(1) the suffix, $(2) the ARMCI libraries,
# $(3) what they depend on beyond their sources.
define NICOFF_ARMCIT_RULE
$$(foreach p,$$(NICOFF_ARMCIT_NAMES),$$(NICOFF_ARMCIT_DIR)/$$(p)-$(1)): \
		$$(NICOFF_ARMCIT_DIR)/%-$(1): $$(NICOFF_ARMCIT_SRC)/%.c $$(NICOFF_ARMCIT_SRC)/armci_test.h $(3)
	@mkdir -p $$(@D)
	$$(NICOFF_ARMCIT_MPICC) -std=gnu11 $$(OPT) $$(WARN_C) -o $$@ $$< $(2)
$$(foreach p,$$(NICOFF_ARMCIT_GA_NAMES),$$(NICOFF_ARMCIT_DIR)/$$(p)-$(1)): \
		$$(NICOFF_ARMCIT_DIR)/%-$(1): $$(NICOFF_ARMCIT_SRC)/%.c $$(NICOFF_ARMCIT_SRC)/armci_test.h $(3)
	@mkdir -p $$(@D)
	$$(NICOFF_ARMCIT_MPICC) -std=gnu11 $$(OPT) $$(WARN_C) -o $$@ $$< \
		$$(NICOFF_ARMCIT_GA_PRE) $(2) $$(NICOFF_ARMCIT_GA_POST)
$$(NICOFF_ARMCIT_BENCH)-$(1): $$(TOP)/libnicoff/armci/bench/armci_bench.c \
		$$(NICOFF_ARMCIT_SRC)/armci_test.h $(3)
	@mkdir -p $$(@D)
	$$(NICOFF_ARMCIT_MPICC) -std=gnu11 $$(OPT) $$(WARN_C) -I$$(NICOFF_ARMCIT_SRC) -o $$@ $$< \
		$(2) -ljson-c
endef

.PHONY: armci-tests armci-tests-build
ifeq ($(NICOFF_ARMCIT_MISSING),)
$(eval $(call NICOFF_ARMCIT_RULE,armci-mpi,$$(NICOFF_ARMCIT_MPI_LIBS),))
USER_TARGETS += $(NICOFF_ARMCIT_BINS_armci-mpi)
NICOFF_ARMCIT_BINS := $(NICOFF_ARMCIT_BINS_armci-mpi)
ifneq ($(NICOFF_ARMCIT_HAVE_NICOFF),)
$(eval $(call NICOFF_ARMCIT_RULE,nicoff,$$(NICOFF_ARMCIT_NICOFF_LIBS),$$(NICOFF_ARMCIT_NICOFF_LIB) $$(LIBNICOFF_LINKS)))
USER_TARGETS += $(NICOFF_ARMCIT_BINS_nicoff)
NICOFF_ARMCIT_BINS += $(NICOFF_ARMCIT_BINS_nicoff)
endif

armci-tests-build: $(NICOFF_ARMCIT_BINS)
	$(if $(NICOFF_ARMCIT_HAVE_NICOFF),,@echo "armci-tests: no $(NICOFF_ARMCIT_NICOFF_LIB) target in this tree (libnicoff/armci/build.mk): the -nicoff builds are skipped")

armci-tests: module armci-tests-build
	BUILD=$(BUILD) KERNEL=$(VMLINUZ) $(TOP)/tools/armci-tests.sh
else
armci-tests armci-tests-build:
	@echo "armci-tests: missing $(NICOFF_ARMCIT_MISSING): run 'make deps'"; exit 1
endif
