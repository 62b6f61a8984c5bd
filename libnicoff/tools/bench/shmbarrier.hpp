// A shared-memory barrier for processes of one machine: what a user without
// nicoff would pick.  A sense-reversing central counter in MAP_SHARED memory;
// the waiters spin for a while, then sleep in futex(FUTEX_WAIT) on the sense
// word, and the last to arrive flips it and wakes them all.
#ifndef NICOFF_BENCH_SHMBARRIER_HPP
#define NICOFF_BENCH_SHMBARRIER_HPP

#include <atomic>
#include <chrono>
#include <cstdint>

namespace nicoff::bench {

// What the processes share: placed in MAP_SHARED memory (SharedMem) and
// set up with init() before they fork.
struct ShmBarrierState {
    std::atomic<std::uint32_t> count; // arrivals in the current barrier
    std::atomic<std::uint32_t> sense; // flips once per barrier; the futex word
    std::uint32_t n;
    void init(std::uint32_t nprocs);
};

// One process's view: its own sense, which it flips at each barrier.
class ShmBarrier {
public:
    // spin: how long a waiter polls before it sleeps.  Throws
    // std::invalid_argument if the state has no processes.
    ShmBarrier(ShmBarrierState &state, std::chrono::microseconds spin);
    // Returns once all n processes have called it for this barrier.
    // Throws std::system_error if the futex call fails.
    void wait();

private:
    ShmBarrierState &st_;
    std::uint32_t sense_;
    std::chrono::microseconds spin_;
};

} // namespace nicoff::bench

#endif // NICOFF_BENCH_SHMBARRIER_HPP
