// libarmci-nicoff: ARMCI_Init and ARMCI_Finalize, ARMCI_Barrier.
//
// MPI must be initialised first (as ARMCI-MPI requires: ARMCI programs
// start with MPI_Init) and is never finalised here.  Init and Finalize
// count, as GA and TCGMSG call ARMCI_Init more than once: the state lives
// from the first Init to the matching last Finalize.
#include "groups.hpp"
#include "state.hpp"

#include <cerrno>

namespace nicoff::armci {

namespace {

int g_inits = 0;

void init() {
    if (g_inits > 0) {
        g_inits++;
        return;
    }
    int up = 0, down = 0;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (!up || down)
        fail(EINVAL, "MPI must be initialised before ARMCI_Init (and not finalised)");
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    if (level == MPI_THREAD_MULTIPLE)
        fail(EOPNOTSUPP, "MPI_THREAD_MULTIPLE: this ARMCI is served by one thread at a time");
    make_state();
    make_world_group(state().comm);
    g_inits = 1;
}

// Drops everything: what is in flight first, then (collectively) the card
// group once every process is done with it, then the regions.
void finalize() {
    if (g_inits == 0)
        fail(EINVAL, "ARMCI is not initialised");
    if (--g_inits > 0)
        return;
    State &s = state();
    (void)s.wait_all();
    try {
        s.group->barrier();
        s.group->destroy();
    } catch (const std::system_error &) {
        // A dead group changes nothing here: the port goes next anyway.
    }
    free_world_group();
    drop_state();
}

} // namespace

} // namespace nicoff::armci

using namespace nicoff::armci;

extern "C" {

int PARMCI_Init(void) {
    return guarded("ARMCI_Init", [] { init(); });
}

int PARMCI_Init_args(int *, char ***) { return PARMCI_Init(); }

int PARMCI_Init_thread(int armci_requested) {
    return guarded("ARMCI_Init_thread", [&] {
        if (armci_requested == MPI_THREAD_MULTIPLE)
            fail(EOPNOTSUPP, "MPI_THREAD_MULTIPLE is not served");
        init();
    });
}

int PARMCI_Init_thread_comm(int armci_requested, MPI_Comm comm) {
    return guarded("ARMCI_Init_thread_comm", [&] {
        int same = MPI_UNEQUAL;
        MPI_Comm_compare(comm, MPI_COMM_WORLD, &same);
        if (same != MPI_IDENT && same != MPI_CONGRUENT)
            fail(EOPNOTSUPP, "ARMCI over a communicator other than MPI_COMM_WORLD");
        if (armci_requested == MPI_THREAD_MULTIPLE)
            fail(EOPNOTSUPP, "MPI_THREAD_MULTIPLE is not served");
        init();
    });
}

int PARMCI_Initialized(void) { return initialised() ? 1 : 0; }

int PARMCI_Finalize(void) {
    return guarded("ARMCI_Finalize", [] { finalize(); });
}

// What ARMCI_Finalize does, once, whatever the count (GA calls it on its
// way out of an error).
void ARMCI_Cleanup(void) {
    if (!initialised())
        return;
    guarded("ARMCI_Cleanup", [] {
        g_inits = 1;
        finalize();
    });
}

// ARMCI's barrier also completes every operation this process started
// (ARMCI_AllFence), so what was put before it is there after it.
void PARMCI_Barrier(void) {
    must("ARMCI_Barrier", [] {
        State &s = state();
        if (const int err = s.wait_all())
            fail(-err, "an operation before the barrier failed");
        s.group->barrier();
    });
}

} // extern "C"

NICOFF_ARMCI_ALIAS(ARMCI_Init, PARMCI_Init);
NICOFF_ARMCI_ALIAS(ARMCI_Init_args, PARMCI_Init_args);
NICOFF_ARMCI_ALIAS(ARMCI_Init_thread, PARMCI_Init_thread);
NICOFF_ARMCI_ALIAS(ARMCI_Init_thread_comm, PARMCI_Init_thread_comm);
NICOFF_ARMCI_ALIAS(ARMCI_Initialized, PARMCI_Initialized);
NICOFF_ARMCI_ALIAS(ARMCI_Finalize, PARMCI_Finalize);
NICOFF_ARMCI_ALIAS(ARMCI_Barrier, PARMCI_Barrier);
