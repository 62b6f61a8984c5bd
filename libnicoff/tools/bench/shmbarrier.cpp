// The futex-based shared-memory barrier (see shmbarrier.hpp).
#include "shmbarrier.hpp"

#include "bench.hpp"

#include <cerrno>
#include <climits>
#include <stdexcept>
#include <system_error>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace nicoff::bench {

namespace {

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
                  std::atomic<std::uint32_t>::is_always_lock_free,
              "the futex word must be a plain 32-bit word");

// Not FUTEX_PRIVATE_FLAG: the waiters are separate processes.
long futex(std::atomic<std::uint32_t> &word, int op, std::uint32_t val) {
    return ::syscall(SYS_futex, reinterpret_cast<std::uint32_t *>(&word), op, val, nullptr, nullptr,
                     0);
}

} // namespace

void ShmBarrierState::init(std::uint32_t nprocs) {
    count.store(0);
    sense.store(0);
    n = nprocs;
}

ShmBarrier::ShmBarrier(ShmBarrierState &state, std::chrono::microseconds spin)
    : st_(state), sense_(state.sense.load()), spin_(spin) {
    if (st_.n == 0)
        throw std::invalid_argument("shm barrier of no processes");
}

void ShmBarrier::wait() {
    sense_ ^= 1;
    if (st_.count.fetch_add(1, std::memory_order_acq_rel) + 1 == st_.n) {
        // Reset before the flip: a process that sees the new sense may
        // arrive at the next barrier at once.
        st_.count.store(0, std::memory_order_relaxed);
        st_.sense.store(sense_, std::memory_order_release);
        if (futex(st_.sense, FUTEX_WAKE, INT_MAX) < 0)
            throw std::system_error(errno, std::generic_category(), "FUTEX_WAKE");
        return;
    }
    if (spin_.count() > 0) {
        const std::uint64_t end = now_ns() + static_cast<std::uint64_t>(spin_.count()) * 1000;
        while (st_.sense.load(std::memory_order_acquire) != sense_ && now_ns() < end)
            __builtin_ia32_pause();
    }
    // Sleeps only while the sense is still the old one: the kernel checks
    // the word against it atomically with queueing the waiter.
    while (st_.sense.load(std::memory_order_acquire) != sense_)
        if (futex(st_.sense, FUTEX_WAIT, sense_ ^ 1) < 0 && errno != EAGAIN && errno != EINTR)
            throw std::system_error(errno, std::generic_category(), "FUTEX_WAIT");
}

} // namespace nicoff::bench
