// Test helper: a ring mapping in plain memory, laid out like the kernel's.
#ifndef NICOFF_TESTS_TEST_RINGS_HPP
#define NICOFF_TESTS_TEST_RINGS_HPP

#include "ring.hpp"

#include <cstdint>
#include <vector>

namespace nicoff::test {

template <class Slot>
class RingMem {
public:
    // A zeroed ring of `entries` slots whose indices both start at `start`.
    RingMem(std::uint32_t entries, std::uint32_t start)
        : entries_(entries),
          mem_((detail::ring_bytes(entries, sizeof(Slot)) + sizeof(Line) - 1) / sizeof(Line)) {
        hdr()->entries = entries;
        hdr()->producer = start;
        hdr()->consumer = start;
    }
    nicoff_ring_hdr *hdr() noexcept { return reinterpret_cast<nicoff_ring_hdr *>(mem_.data()); }
    Slot *slots() noexcept { return detail::ring_slots<Slot>(mem_.data()); }
    Slot &slot(std::uint32_t index) noexcept { return slots()[index & (entries_ - 1)]; }
    std::uint32_t entries() const noexcept { return entries_; }

private:
    struct alignas(64) Line {
        unsigned char bytes[64];
    };
    std::uint32_t entries_;
    std::vector<Line> mem_;
};

} // namespace nicoff::test

#endif // NICOFF_TESTS_TEST_RINGS_HPP
