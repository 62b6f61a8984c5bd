// Internal: the ring index logic shared by nicoff::Port and the unit tests.
//
// A nicoff ring mapping is a struct nicoff_ring_hdr (NICOFF_RING_HDR_SIZE
// bytes) followed by `entries` slots.  Indices are free-running u32 values
// masked with entries - 1, so "used" is always producer - consumer computed
// modulo 2^32 and wrap-around needs no special case.
//
// The process owns the producer index of the command ring and the consumer
// index of the completion ring; it keeps private copies of both and only
// ever publishes them (release).  The card's indices are read with acquire
// and checked: a card index that moves backwards or past what the process
// allows marks the ring broken, and a broken ring never touches its slots
// again.
#ifndef NICOFF_SRC_RING_HPP
#define NICOFF_SRC_RING_HPP

#include <nicoff/nicoff_abi.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace nicoff::detail {

static_assert(sizeof(nicoff_ring_hdr) == NICOFF_RING_HDR_SIZE);
static_assert(sizeof(nicoff_cmd) == 64);
static_assert(sizeof(nicoff_cqe) == 64);

inline std::uint32_t load_acquire(const std::uint32_t *p) noexcept {
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

inline std::uint32_t load_relaxed(const std::uint32_t *p) noexcept {
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}

inline void store_release(std::uint32_t *p, std::uint32_t v) noexcept {
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

constexpr bool is_pow2(std::uint32_t v) noexcept { return v != 0 && (v & (v - 1)) == 0; }

// Entries between consumer and producer (modulo 2^32).
constexpr std::uint32_t ring_used(std::uint32_t prod, std::uint32_t cons) noexcept {
    return prod - cons;
}

// Free slots of a ring whose indices are sane (ring_used <= entries).
constexpr std::uint32_t ring_free(std::uint32_t entries, std::uint32_t prod,
                                  std::uint32_t cons) noexcept {
    return entries - (prod - cons);
}

// May a peer's free-running index move from `last` to `now` when it must
// never pass `limit`?  True for last <= now <= limit on the circle that
// starts at `last`; a backwards move or one beyond limit is false.
constexpr bool index_advance_ok(std::uint32_t last, std::uint32_t now,
                                std::uint32_t limit) noexcept {
    return now - last <= limit - last;
}

// Bytes of a ring mapping with `entries` slots of `slot` bytes.
constexpr std::size_t ring_bytes(std::uint32_t entries, std::size_t slot) noexcept {
    return NICOFF_RING_HDR_SIZE + std::size_t{entries} * slot;
}

template <class Slot>
Slot *ring_slots(void *base) noexcept {
    return reinterpret_cast<Slot *>(static_cast<unsigned char *>(base) + NICOFF_RING_HDR_SIZE);
}

struct PostResult {
    std::uint32_t posted = 0; // commands made visible to the card
    bool kick = false;        // the card sleeps: ring the doorbell (KICK)
    bool broken = false;      // the card's consumer index is insane
};

// What the process keeps of one ring, whichever end it holds: its own
// index (published with release), the card's index as last seen, checked
// on every refresh.  Produce: the process fills the slots (command ring);
// otherwise it drains them (completion ring).
template <class Slot, bool Produce>
class RingEnd {
public:
    // Takes the indices found in the header as the starting point.  False
    // if the header does not describe a sane ring of `entries` slots.
    bool attach(nicoff_ring_hdr *hdr, Slot *slots, std::uint32_t entries) noexcept {
        if (!is_pow2(entries) || load_relaxed(&hdr->entries) != entries)
            return false;
        hdr_ = hdr;
        slots_ = slots;
        entries_ = entries;
        mask_ = entries - 1;
        ours_ = load_relaxed(own_index(hdr));
        card_ = load_acquire(card_index(hdr));
        broken_ = used() > entries;
        return !broken_;
    }

    bool broken() const noexcept { return broken_; }
    std::uint32_t entries() const noexcept { return entries_; }

protected:
    static std::uint32_t *own_index(nicoff_ring_hdr *h) noexcept {
        return Produce ? &h->producer : &h->consumer;
    }
    static std::uint32_t *card_index(nicoff_ring_hdr *h) noexcept {
        return Produce ? &h->consumer : &h->producer;
    }

    std::uint32_t used() const noexcept {
        return Produce ? ring_used(ours_, card_) : ring_used(card_, ours_);
    }

    // Reads the card's index.  It may reach what was posted (producing) or
    // a whole ring beyond what was drained (consuming); a move backwards or
    // beyond marks the ring broken for good.
    bool refresh() noexcept {
        if (broken_)
            return false;
        const std::uint32_t v = load_acquire(card_index(hdr_));
        if (!index_advance_ok(card_, v, Produce ? ours_ : ours_ + entries_)) {
            broken_ = true;
            return false;
        }
        card_ = v;
        return true;
    }

    // The i-th slot from our index on.
    Slot &slot(std::uint32_t i) noexcept { return slots_[(ours_ + i) & mask_]; }

    // Hands n slots over to the card.
    void publish(std::uint32_t n) noexcept {
        ours_ += n;
        store_release(own_index(hdr_), ours_);
    }

    nicoff_ring_hdr *hdr_ = nullptr;
    std::uint32_t ours_ = 0; // published to own_index()
    std::uint32_t card_ = 0; // last card_index() seen
    bool broken_ = true;

private:
    Slot *slots_ = nullptr;
    std::uint32_t entries_ = 0;
    std::uint32_t mask_ = 0;
};

// Producer side of a command ring.  One thread at a time.
class CmdProducer : public RingEnd<nicoff_cmd, true> {
public:
    // Free slots, asking the card for its consumer index.  0 when broken.
    std::uint32_t free_slots() noexcept {
        if (!refresh())
            return 0;
        return ring_free(entries(), ours_, card_);
    }

    // Copies the longest prefix of cmds[0..n) that fits into the ring,
    // publishes the producer index once (release), then looks at the
    // card's NEED_WAKEUP flag after a full fence.  The fence orders the
    // publication before the flag load; the card does the mirror image
    // (set the flag, fence, re-read the producer), so one of the two sides
    // always sees the other: no lost wake-up.
    PostResult post(const nicoff_cmd *cmds, std::uint32_t n) noexcept {
        PostResult r;
        if (broken_) {
            r.broken = true;
            return r;
        }
        std::uint32_t room = ring_free(entries(), ours_, card_);
        if (room < n) {
            if (!refresh()) {
                r.broken = true;
                return r;
            }
            room = ring_free(entries(), ours_, card_);
        }
        const std::uint32_t k = std::min(n, room);
        if (k == 0)
            return r;
        for (std::uint32_t i = 0; i < k; i++)
            std::memcpy(&slot(i), &cmds[i], sizeof(nicoff_cmd));
        publish(k);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        r.posted = k;
        r.kick = (load_relaxed(&hdr_->flags) & NICOFF_RING_NEED_WAKEUP) != 0;
        return r;
    }

    std::uint32_t producer() const noexcept { return ours_; }
};

// The doorbell seen from the completion side.  The card takes a command
// only when the completion ring has room, so a card thread may go to sleep
// with commands pending because the completion ring is full; nothing would
// wake it when the process then frees completion slots without posting.
// So after the consumer index is published (release), the completion side
// fences and rings the doorbell too if the card sleeps while commands are
// pending.  The card's mirror image (set NEED_WAKEUP, fence, re-check both
// rings) makes one of the two sides see the other.
inline bool cq_side_needs_kick(const nicoff_ring_hdr *cmd_hdr) noexcept {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if ((load_relaxed(&cmd_hdr->flags) & NICOFF_RING_NEED_WAKEUP) == 0)
        return false;
    return load_acquire(&cmd_hdr->producer) != load_acquire(&cmd_hdr->consumer);
}

// Consumer side of a completion ring.  One thread at a time.
class CqConsumer : public RingEnd<nicoff_cqe, false> {
public:
    // Completions ready to be drained (0 when broken).
    std::uint32_t available() noexcept {
        if (used() == 0)
            refresh();
        return broken_ ? 0 : used();
    }

    // Copies up to max completions out, then publishes the consumer index
    // once (release), which hands the slots back to the card.
    std::uint32_t drain(nicoff_cqe *out, std::uint32_t max) noexcept {
        if (broken_ || max == 0)
            return 0;
        if (used() < max && !refresh())
            return 0;
        const std::uint32_t n = std::min(max, used());
        if (n == 0)
            return 0;
        for (std::uint32_t i = 0; i < n; i++)
            std::memcpy(&out[i], &slot(i), sizeof(nicoff_cqe));
        publish(n);
        return n;
    }

    std::uint32_t consumer() const noexcept { return ours_; }
};

} // namespace nicoff::detail

#endif // NICOFF_SRC_RING_HPP
