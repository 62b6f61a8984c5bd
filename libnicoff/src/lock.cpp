// nicoff::McsLock and TasLock: locks over remote atomics and puts.
#include "atomic_impl.hpp"

#include <algorithm>

namespace nicoff {

namespace {

// Queue node layout: next at 0, locked at 8 (the rest is padding).
constexpr std::uint64_t next_off = 0;
constexpr std::uint64_t locked_off = 8;

// A rank in a next word: rank + 1 in the low half, its complement in the
// high half; 0 is NIL.  A put may land byte by byte (the card copies with
// memcpy), so a reader takes a value only once both halves agree: a mix
// of old (0) and new bytes never does.
constexpr std::uint64_t encode(std::uint32_t rank) {
    const std::uint64_t v = std::uint64_t{rank} + 1;
    return v | (~v << 32);
}

constexpr std::uint64_t nil = 0;
constexpr std::uint64_t torn = ~0ull;

std::uint64_t decode(std::uint64_t word) {
    if (word == 0)
        return nil;
    const std::uint64_t lo = word & 0xffffffffu, hi = word >> 32;
    return hi == (~lo & 0xffffffffu) && lo ? lo : torn; // rank + 1, NIL or torn
}

void store(std::uint64_t *p, std::uint64_t v) {
    std::atomic_ref<std::uint64_t>(*p).store(v, std::memory_order_seq_cst);
}

} // namespace

// ---------------------------------------------------------------- McsLock --

McsLock::McsLock(RemoteMemory &mem, std::uint32_t rank, std::vector<RemoteWord> qnodes,
                 RemoteWord tail, std::span<std::byte> local_node)
    : mem_(mem), rank_(rank), qnodes_(std::move(qnodes)), tail_(tail) {
    if (rank_ >= qnodes_.size() || qnodes_.size() >= 0xffffffffu)
        detail::throw_errno(EINVAL, "nicoff: McsLock rank outside its qnodes");
    if (local_node.size() < node_bytes || reinterpret_cast<std::uintptr_t>(local_node.data()) % 8)
        detail::throw_errno(EINVAL, "nicoff: McsLock node must be 64 bytes, 8-byte aligned");
    if (tail_.width != 8 || std::any_of(qnodes_.begin(), qnodes_.end(),
                                        [](const RemoteWord &w) { return w.offset % 8; }))
        detail::throw_errno(EINVAL, "nicoff: McsLock words must be 8 bytes, 8-byte aligned");
    next_ = reinterpret_cast<std::uint64_t *>(local_node.data() + next_off);
    locked_ = reinterpret_cast<std::uint64_t *>(local_node.data() + locked_off);
    store(next_, nil);
    store(locked_, 0);
}

std::uint64_t McsLock::read_next() const noexcept {
    detail::Waiter w;
    for (;;) {
        const std::uint64_t v = decode(detail::load_acquire(next_));
        if (v != torn)
            return v;
        w.pause(); // a put is landing: look again
    }
}

void McsLock::lock() {
    store(next_, nil);
    const std::uint64_t pred = mem_.swap(tail_, rank_ + 1);
    if (pred == 0)
        return;
    if (pred > qnodes_.size())
        detail::throw_errno(EPROTO, "nicoff: McsLock tail holds an unknown rank");
    // Waiting, and ready to be woken, before the predecessor can know of us.
    store(locked_, 1);
    mem_.prepare_wait();
    mem_.put64(qnodes_[pred - 1].at(next_off), encode(rank_));
    mem_.wait_while(locked_, 1);
}

bool McsLock::try_lock() {
    store(next_, nil);
    return mem_.compare_swap(tail_, 0, rank_ + 1) == 0;
}

void McsLock::unlock() {
    std::uint64_t succ = read_next();
    if (succ == nil) {
        // Nobody linked behind us: free the lock if we are still the tail.
        if (mem_.compare_swap(tail_, rank_ + 1, 0) == rank_ + 1)
            return;
        // Someone swapped the tail and is about to link: wait for it.
        detail::Waiter w;
        while ((succ = read_next()) == nil)
            w.pause();
    }
    if (succ > qnodes_.size())
        detail::throw_errno(EPROTO, "nicoff: McsLock successor of an unknown rank");
    mem_.put64_wake(qnodes_[succ - 1].at(locked_off), 0);
}

// ---------------------------------------------------------------- TasLock --

TasLock::TasLock(RemoteMemory &mem, std::uint32_t rank, RemoteWord word)
    : mem_(mem), rank_(rank), word_(word) {
    if (rank_ >= 0xfffffffeu)
        detail::throw_errno(EINVAL, "nicoff: TasLock rank out of range");
}

bool TasLock::try_lock() { return mem_.compare_swap(word_, 0, rank_ + 1) == 0; }

void TasLock::lock() {
    // Exponential backoff between attempts, up to ~64 us of pauses.
    unsigned backoff = 16;
    while (!try_lock()) {
        for (unsigned i = 0; i < backoff; i++)
            detail::relax_cpu();
        backoff = std::min(backoff * 2, 4096u);
    }
}

void TasLock::unlock() {
    if (mem_.compare_swap(word_, rank_ + 1, 0) != rank_ + 1)
        detail::throw_errno(EPERM, "nicoff: TasLock unlocked by a rank that does not hold it");
}

} // namespace nicoff
