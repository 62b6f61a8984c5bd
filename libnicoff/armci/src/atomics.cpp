// libarmci-nicoff: Rmw on the card's atomics, and the mutexes.
//
// The mutexes are TasLocks (seed 001's test-and-set lock over the card's
// compare-and-swap) on words of the hosting process's memory: ARMCI lets
// a process hold several mutexes at once, and an MCS lock would need a
// queue node per rank for every mutex of every process, where a
// test-and-set lock needs the one word.
#include "state.hpp"

#include <cerrno>
#include <cstring>
#include <type_traits>

namespace nicoff::armci {

namespace {

// The mutex words of every process, collective: each process registers
// count words (at least one, so that every process has a region) and
// learns every other's (card, port, rkey).
void create_mutexes(int count) {
    State &s = state();
    if (count < 0)
        fail(EINVAL, "a negative mutex count");
    if (s.mutex_mr)
        fail(EEXIST, "mutexes exist already (ARMCI_Destroy_mutexes first)");
    s.mutex_words.assign(static_cast<std::size_t>(std::max(count, 1)), 0);
    s.mutex_mr =
        s.rma->register_memory(std::as_writable_bytes(std::span(s.mutex_words)), NICOFF_ACCESS_ALL);
    std::array<std::uint32_t, 4> mine = {s.rma->card(), s.rma->number(), s.mutex_mr.rkey(),
                                         static_cast<std::uint32_t>(count)};
    std::vector<std::array<std::uint32_t, 4>> all(s.nproc);
    MPI_Allgather(mine.data(), 4, MPI_UINT32_T, all.data(), 4, MPI_UINT32_T, s.comm);
    s.mutex_base.clear();
    for (const auto &a : all) {
        if (a[3] != all[0][3])
            fail(EINVAL, "processes asked for different numbers of mutexes");
        s.mutex_base.push_back({a[0], a[1], a[2], 8, 0});
    }
    s.mutex_count = count;
}

template <class T>
T local_value(const void *p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

// One atomic of the width of T on proc's word at prem, executed by its
// card; the old value goes to ploc.
template <class T>
void rmw(std::uint8_t opcode, void *ploc, void *prem, T operand, int proc) {
    State &s = state();
    const std::uint64_t bits = static_cast<std::make_unsigned_t<T>>(operand);
    const auto old = static_cast<T>(s.mem->atomic(opcode, s.word(proc, prem, sizeof(T)), bits, 0));
    std::memcpy(ploc, &old, sizeof(T));
}

TasLock mutex(int m, int proc) {
    State &s = state();
    const std::uint32_t p = proc_of(proc);
    if (m < 0 || m >= s.mutex_count)
        fail(EINVAL, "mutex " + std::to_string(m) + " is not in [0, " +
                         std::to_string(s.mutex_count) + ")");
    return TasLock(*s.mem, s.me, s.mutex_base[p].at(static_cast<std::uint64_t>(m) * 8));
}

} // namespace

} // namespace nicoff::armci

using namespace nicoff::armci;

extern "C" {

int PARMCI_Rmw(int op, void *ploc, void *prem, int value, int proc) {
    return guarded("ARMCI_Rmw", [&] {
        if (!ploc)
            fail(EINVAL, "a NULL local word");
        switch (op) {
        case ARMCI_FETCH_AND_ADD:
            return rmw<int>(NICOFF_OP_FETCH_ADD, ploc, prem, value, proc);
        case ARMCI_FETCH_AND_ADD_LONG:
            return rmw<long>(NICOFF_OP_FETCH_ADD, ploc, prem, value, proc);
        case ARMCI_SWAP:
            return rmw<int>(NICOFF_OP_FETCH_WRITE, ploc, prem, local_value<int>(ploc), proc);
        case ARMCI_SWAP_LONG:
            return rmw<long>(NICOFF_OP_FETCH_WRITE, ploc, prem, local_value<long>(ploc), proc);
        default:
            fail(EINVAL, "unknown Rmw operation " + std::to_string(op));
        }
    });
}

int PARMCI_Create_mutexes(int count) {
    return guarded("ARMCI_Create_mutexes", [&] { create_mutexes(count); });
}

// Collective: once every process is past the barrier, nobody holds or
// waits for a mutex any more.
int PARMCI_Destroy_mutexes(void) {
    return guarded("ARMCI_Destroy_mutexes", [] {
        State &s = state();
        if (!s.mutex_mr)
            fail(EINVAL, "no mutexes (ARMCI_Create_mutexes)");
        s.group->barrier();
        s.mutex_mr.deregister();
        s.mutex_words.clear();
        s.mutex_base.clear();
        s.mutex_count = 0;
    });
}

void PARMCI_Lock(int m, int proc) {
    must("ARMCI_Lock", [&] { mutex(m, proc).lock(); });
}

// What the holder wrote under the lock has landed before the next holder
// can take it.
void PARMCI_Unlock(int m, int proc) {
    must("ARMCI_Unlock", [&] {
        (void)state().wait_all();
        mutex(m, proc).unlock();
    });
}

} // extern "C"

NICOFF_ARMCI_ALIAS(ARMCI_Rmw, PARMCI_Rmw);
NICOFF_ARMCI_ALIAS(ARMCI_Create_mutexes, PARMCI_Create_mutexes);
NICOFF_ARMCI_ALIAS(ARMCI_Destroy_mutexes, PARMCI_Destroy_mutexes);
NICOFF_ARMCI_ALIAS(ARMCI_Lock, PARMCI_Lock);
NICOFF_ARMCI_ALIAS(ARMCI_Unlock, PARMCI_Unlock);
