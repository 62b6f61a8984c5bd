// Internal: a port's completion dispatcher.  The library's helpers (Group,
// HostBarrier, CardMemory, HostMemory, AtomicServer) each register a
// handler and get a small owner id; the owner id rides in the top bits of
// the tags of their commands (liburing's user_data idea), so that one
// completion ring can serve several helpers at once: whoever waits reaps
// every completion and hands each one to its owner's handler.
#ifndef NICOFF_SRC_DISPATCH_HPP
#define NICOFF_SRC_DISPATCH_HPP

#include "common.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace nicoff::detail {

inline void relax_cpu() noexcept { __builtin_ia32_pause(); }

// How a waiter waits between looks: it spins (PAUSE for pause_looks looks,
// then yielding the CPU) for spin_ns, then sleeps sleep_ns per look.
class Waiter {
public:
    static constexpr std::uint64_t default_spin_ns = 50'000;
    static constexpr std::uint64_t default_sleep_ns = 50'000;

    explicit Waiter(std::uint64_t spin_ns = default_spin_ns,
                    std::uint64_t sleep_ns = default_sleep_ns, unsigned pause_looks = 64)
        : spin_ns_(spin_ns), sleep_ns_(sleep_ns), pause_looks_(pause_looks) {}
    void pause();
    // Still within the spinning budget (a caller with an event to sleep on
    // sleeps on it instead of calling pause() once this is false).
    bool spinning();

private:
    std::uint64_t spin_ns_, sleep_ns_;
    std::uint64_t start_ = 0;
    unsigned spins_ = 0, pause_looks_;
};

// Where completions come from: a Port (Port::Impl), or an in-memory ring
// pair in the unit tests.
class CompletionSource {
public:
    virtual std::size_t poll(std::span<nicoff_cqe> out) noexcept = 0;
    virtual bool in_error() const noexcept = 0;
    // Sleeps until completions are ready (true) or the timeout passes
    // (false; negative: no timeout).  Throws EIO in the error state.
    virtual bool wait(std::chrono::milliseconds timeout) = 0;

protected:
    ~CompletionSource() = default;
};

// A completion of one owner's command; runs in the thread that reaps, so
// it must not throw: it records what its owner's waiter reports.
using CompletionHandler = std::function<void(const nicoff_cqe &)>;

using Clock = std::chrono::steady_clock;

// When a wait gives up: at a fixed time, or after a silence (no completion
// at all reaped for that long), as a caller that waits for a stream of
// completions wants.
struct Deadline {
    Clock::time_point at = Clock::time_point::max();
    Clock::duration silence = Clock::duration::zero(); // > 0: `at` follows the last completion

    static Deadline never() noexcept { return {}; }
    // Negative: never.
    static Deadline after(Clock::duration d) noexcept;
    static Deadline after_silence(Clock::duration d) noexcept;
};

// How wait_until passes the time between looks at the ring: a Waiter's
// spin, then sleeps in poll(2) on the port for at most max_sleep each
// (negative: until the deadline), or, with nap, the Waiter's naps (for a
// caller that no completion may wake).  On few CPUs, and in this emulation
// the card threads share the CPUs with the processes, a waiter that keeps
// spinning starves what it waits for.
struct Pacing {
    enum class Sleep { port, nap };
    Clock::duration spin = std::chrono::nanoseconds(Waiter::default_spin_ns);
    Sleep sleep = Sleep::port;
    std::chrono::milliseconds max_sleep{-1};
    unsigned pause_looks = 64;
    // Spin again after every completion reaped and every sleep.
    bool respin = false;
    // Counts the sleeps in poll(2), if set.
    std::uint64_t *sleeps = nullptr;
};

class Dispatcher {
public:
    using Owner = std::uint16_t;
    // A tag's top 16 bits name its owner (0: nobody, as in most tags an
    // application picks), the other 48 are the owner's.
    static constexpr unsigned owner_shift = 48;
    static constexpr std::uint64_t local_mask = (std::uint64_t{1} << owner_shift) - 1;

    explicit Dispatcher(CompletionSource &src) noexcept : src_(src) {}
    Dispatcher(const Dispatcher &) = delete;
    Dispatcher &operator=(const Dispatcher &) = delete;

    // A new owner for handler; ids are not reused while others are free,
    // so that a late completion of a gone owner is not taken for another's.
    Owner add(CompletionHandler handler);
    // Gives an owner a new handler (its object moved).
    void set(Owner owner, CompletionHandler handler);
    // Its later completions count as unknown.
    void remove(Owner owner) noexcept;

    static constexpr std::uint64_t tag(Owner owner, std::uint64_t local) noexcept {
        return std::uint64_t{owner} << owner_shift | (local & local_mask);
    }
    static constexpr std::uint64_t local(std::uint64_t tag) noexcept { return tag & local_mask; }
    static constexpr Owner owner_of(std::uint64_t tag) noexcept {
        return static_cast<Owner>(tag >> owner_shift);
    }

    // One look at the ring: every completion there (up to a batch) goes to
    // its owner's handler; returns how many were reaped.  A completion of
    // no registered owner is counted (unknown()) and reported by the next
    // check().  Throws EIO when the ring is empty and the port is in the
    // error state.
    std::size_t reap();
    // EPROTO once for the unknown completions reaped since the last check.
    void check();

    // Reaps and dispatches until done() holds (true) or the deadline passes
    // (false).  done() is asked after every look at the ring, so it may
    // have side effects (posting a command once the ring has room).
    // Throws what reap() and check() throw, and EIO from the sleep.
    bool wait_until(const std::function<bool()> &done, Deadline deadline, const Pacing &pacing);

    std::uint64_t unknown() const noexcept { return unknown_; }
    // The tag of the last unknown completion.
    std::uint64_t last_unknown_tag() const noexcept { return last_unknown_tag_; }

private:
    struct Entry {
        Owner owner;
        CompletionHandler handler;
    };
    const CompletionHandler *find(Owner owner) const noexcept;

    CompletionSource &src_;
    std::vector<Entry> entries_;
    Owner next_ = 1;
    std::uint64_t unknown_ = 0;
    std::uint64_t reported_ = 0;
    std::uint64_t last_unknown_tag_ = 0;
};

// An owner id for as long as an object that does not move lives.
class Registration {
public:
    Registration(Dispatcher &d, CompletionHandler handler)
        : d_(d), owner_(d.add(std::move(handler))) {}
    Registration(const Registration &) = delete;
    Registration &operator=(const Registration &) = delete;
    ~Registration() { d_.remove(owner_); }

    Dispatcher &dispatcher() const noexcept { return d_; }
    std::uint64_t tag(std::uint64_t local) const noexcept { return Dispatcher::tag(owner_, local); }

private:
    Dispatcher &d_;
    Dispatcher::Owner owner_;
};

} // namespace nicoff::detail

#endif // NICOFF_SRC_DISPATCH_HPP
