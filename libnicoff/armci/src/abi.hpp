// libarmci-nicoff: Debian's ARMCI-MPI headers (armci.h, message.h), so that
// the ABI is exactly theirs, with C linkage and default visibility (the
// library is built with hidden visibility; only these names are exported).
#ifndef NICOFF_ARMCI_ABI_HPP
#define NICOFF_ARMCI_ABI_HPP

#include <mpi.h>

#pragma GCC visibility push(default)
extern "C" {
#include <armci.h>
#include <message.h>
}
#pragma GCC visibility pop

// ARMCI_name as a weak alias of PARMCI_name (or parmci_ of armci_), as
// ARMCI-MPI defines them, so a profiling layer may replace the ARMCI_ name.
#define NICOFF_ARMCI_ALIAS(name, target)                                                           \
    extern "C" __typeof__(target) name __attribute__((weak, alias(#target)))

#endif
