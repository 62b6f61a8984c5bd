// libnicoff: remote atomics used synchronously, and locks built on them
// (C++20).  See Documentation/atomics.md.
//
// RemoteMemory is what the locks need of the fabric: a remote atomic that
// returns the old value, and an 8-byte put.  Two implementations:
//
//   CardMemory   the target card executes the atomic itself (NICOFF_OP_
//                FETCH_ADD, FETCH_WRITE, COMPARE_SWAP): no process at the
//                target is involved (seed 001, Fig. 1b).
//   HostMemory   the baseline of seed 001 section V-A: an AtomicServer, a
//                process at the target, receives the request as a message,
//                executes it on its memory with CPU atomics and sends the
//                old value back (Fig. 1a).  It waits for requests in one of
//                three ways (ServerMode): poll, spin then block, block.
//
// A RemoteWord names the word: for CardMemory the (card, port, rkey,
// offset) of the target's region, which needs NICOFF_ACCESS_REMOTE_ATOMIC
// for atomics and NICOFF_ACCESS_REMOTE_WRITE for puts (NICOFF_OP_PUT); for
// HostMemory the (card, port) of the AtomicServer's port and the offset in
// the memory it serves (rkey unused): as in seed 001's host-based locks,
// every remote access, puts included, is a request to the target's server
// (a put is a write that asks for no reply).
//
// McsLock is seed 001's distributed MCS queue lock (section IV): a lock word
// at the lock's home holds the last rank in the queue (rank + 1, 0 when
// free); each rank has a queue node {next, locked} in its own memory that
// its neighbours write with puts.  TasLock is a test-and-set lock over CAS,
// for comparison.  Both take any RemoteMemory, so the same algorithm runs
// over card-based and host-based atomics.
//
// Threads: a RemoteMemory and the locks over it belong to one thread at a
// time, and their Port must not be used for anything else meanwhile (they
// consume its completions).  Errors throw std::system_error (errno values):
// the completion's status of a failed atomic or put, EIO for a port in the
// error state, ETIMEDOUT when nothing completes for the timeout.
#ifndef NICOFF_ATOMIC_HPP
#define NICOFF_ATOMIC_HPP

#include <nicoff/nicoff.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace nicoff {

class NICOFF_API RemoteMemory {
public:
    virtual ~RemoteMemory();
    // One atomic on w; returns the word's old value once it is done.
    virtual std::uint64_t atomic(std::uint8_t opcode, const RemoteWord &w, std::uint64_t operand,
                                 std::uint64_t compare) = 0;
    // Writes value into the 8 bytes at dst (a region with REMOTE_WRITE).
    // May return before the value lands; flush() waits for every put.
    virtual void put64(const RemoteWord &dst, std::uint64_t value) = 0;
    virtual void flush() = 0;

    // For a waiter that sleeps (the MCS lock's queue): the owner of a word of
    // its own memory, which others write with put64_wake, calls
    // prepare_wait() before it lets them know of it, then wait_while() to
    // return once the word no longer holds value.  The base versions spin,
    // then look every 50 us.  CardMemory's owner sleeps until a wake-up
    // message to its port, which put64_wake sends after the put (dst.port
    // must then be the port of the owner's CardMemory); HostMemory's until
    // the AtomicServer thread that writes the word in its process notifies.
    virtual void prepare_wait() {}
    virtual void wait_while(const std::uint64_t *word, std::uint64_t value);
    virtual void put64_wake(const RemoteWord &dst, std::uint64_t value) { put64(dst, value); }

    std::uint64_t fetch_add(const RemoteWord &w, std::uint64_t value) {
        return atomic(NICOFF_OP_FETCH_ADD, w, value, 0);
    }
    std::uint64_t swap(const RemoteWord &w, std::uint64_t value) {
        return atomic(NICOFF_OP_FETCH_WRITE, w, value, 0);
    }
    std::uint64_t compare_swap(const RemoteWord &w, std::uint64_t compare, std::uint64_t swap) {
        return atomic(NICOFF_OP_COMPARE_SWAP, w, swap, compare);
    }
};

namespace detail {
class Endpoint;
} // namespace detail

// What CardMemory and HostMemory share: an endpoint on port that posts
// the atomics and puts and waits for their completions.  host: the
// atomics go to an AtomicServer instead of the target card.
class NICOFF_API EndpointMemory : public RemoteMemory {
public:
    ~EndpointMemory() override;
    std::uint64_t atomic(std::uint8_t opcode, const RemoteWord &w, std::uint64_t operand,
                         std::uint64_t compare) override;
    void put64(const RemoteWord &dst, std::uint64_t value) override;
    void flush() override;

protected:
    EndpointMemory(Port &port, std::chrono::milliseconds timeout, bool host);
    std::unique_ptr<detail::Endpoint> ep_;
};

// Atomics executed by the target card.  Registers a small scratch region
// on port (the source of its puts).
class NICOFF_API CardMemory final : public EndpointMemory {
public:
    explicit CardMemory(Port &port,
                        std::chrono::milliseconds timeout = std::chrono::milliseconds(30000));
    void prepare_wait() override;
    void wait_while(const std::uint64_t *word, std::uint64_t value) override;
    void put64_wake(const RemoteWord &dst, std::uint64_t value) override;
};

// Atomics executed by an AtomicServer: a request message to (w.card,
// w.port), the old value in the reply.  put64 is a write request to the
// server at (dst.card, dst.port) that asks for no reply.
class NICOFF_API HostMemory final : public EndpointMemory {
public:
    explicit HostMemory(Port &port,
                        std::chrono::milliseconds timeout = std::chrono::milliseconds(30000));
    void wait_while(const std::uint64_t *word, std::uint64_t value) override;
};

// How an AtomicServer waits for requests (seed 001: gm_receive(),
// gm_blocking_receive(), gm_blocking_receive_no_spin()).
enum class ServerMode {
    poll,       // spins on the completion ring (yielding once idle for a while)
    spin_block, // spins for `spin`, then sleeps in poll(2) until a completion
    block,      // sleeps in poll(2) whenever nothing is ready
};

// The host-based atomic server: serves HostMemory requests on memory, a
// span of this process's memory (the words, naturally aligned at their
// offsets from memory.data(), which must be 8-byte aligned).  Requests
// outside it get -ERANGE, misaligned ones -EINVAL.  It executes them with
// CPU atomics (std::atomic_ref), so they are atomic against this
// process's own atomics and against card atomics on the same words.
class NICOFF_API AtomicServer {
public:
    struct Stats {
        std::uint64_t requests = 0; // executed
        std::uint64_t sleeps = 0;   // times it slept in poll(2)
    };

    AtomicServer(Port &port, std::span<std::byte> memory, ServerMode mode,
                 std::chrono::microseconds spin = std::chrono::microseconds(50));
    ~AtomicServer();
    AtomicServer(const AtomicServer &) = delete;
    AtomicServer &operator=(const AtomicServer &) = delete;

    // Serves until stop() returns true (asked between requests, and at
    // least every 10 ms while asleep).
    void serve(const std::function<bool()> &stop);
    void serve(const std::atomic<bool> &stop) {
        serve([&stop] { return stop.load(std::memory_order_acquire); });
    }
    // Serves what is ready, without waiting; returns the requests served.
    std::size_t serve_ready();
    Stats stats() const noexcept;
    ServerMode mode() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Holds a lock for its lifetime (BasicLockable: lock(), unlock()).
template <class L>
class [[nodiscard]] LockGuard {
public:
    explicit LockGuard(L &l) : l_(&l) { l.lock(); }
    LockGuard(LockGuard &&other) noexcept : l_(other.l_) { other.l_ = nullptr; }
    LockGuard(const LockGuard &) = delete;
    LockGuard &operator=(const LockGuard &) = delete;
    LockGuard &operator=(LockGuard &&) = delete;
    // An unlock() that throws here ends the program (std::terminate).
    ~LockGuard() {
        if (l_)
            l_->unlock();
    }

private:
    L *l_;
};

// Seed 001's distributed MCS lock.  Participant rank's queue node is the
// node_bytes bytes at local_node (8-byte aligned), which the others reach
// as qnodes[rank]: with CardMemory a region of its port registered with
// NICOFF_ACCESS_REMOTE_WRITE, with HostMemory memory an AtomicServer of
// this participant serves.  Every participant gets the same qnodes, in rank order,
// and the same tail: the lock word at the home (8 bytes, 0 when the lock is
// free, reached through mem).  The node must not be touched otherwise while
// the lock object lives.  lock() waits on the local node, without a card
// round trip, until its predecessor hands the lock over: it spins a
// little, then sleeps until woken (RemoteMemory::wait_while).
class NICOFF_API McsLock {
public:
    static constexpr std::size_t node_bytes = 64;
    using Guard = LockGuard<McsLock>;

    McsLock(RemoteMemory &mem, std::uint32_t rank, std::vector<RemoteWord> qnodes, RemoteWord tail,
            std::span<std::byte> local_node);

    void lock();
    void unlock();
    // One attempt: takes the lock only if nobody holds or waits for it.
    bool try_lock();
    Guard guard() { return Guard(*this); }
    std::uint32_t rank() const noexcept { return rank_; }

private:
    std::uint64_t read_next() const noexcept;
    RemoteMemory &mem_;
    std::uint32_t rank_;
    std::vector<RemoteWord> qnodes_;
    RemoteWord tail_;
    std::uint64_t *next_;
    std::uint64_t *locked_;
};

// A test-and-set lock: CAS(word, 0, rank + 1) until it succeeds, with
// exponential backoff; unlock() puts 0 back with a CAS that checks the
// holder (EPERM if the caller does not hold it).
class NICOFF_API TasLock {
public:
    using Guard = LockGuard<TasLock>;

    TasLock(RemoteMemory &mem, std::uint32_t rank, RemoteWord word);
    void lock();
    void unlock();
    bool try_lock();
    Guard guard() { return Guard(*this); }

private:
    RemoteMemory &mem_;
    std::uint32_t rank_;
    RemoteWord word_;
};

} // namespace nicoff

#endif // NICOFF_ATOMIC_HPP
