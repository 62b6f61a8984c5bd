// libarmci-nicoff: which registered region holds an address.
//
// ARMCI names remote memory by the address it has in its owner's process
// (what ARMCI_Malloc handed out).  Every process keeps, per process of the
// job, the pieces of every allocation that process holds: its base and
// size there, and the (card, port, rkey) of its registration.  An address
// and length translate to the region and the offset in it, or fail
// cleanly, before any command reaches a card.  The same table, for this
// process alone, finds the local buffers already registered.  No MPI and
// no card here, so that the host unit tests cover it.
#ifndef NICOFF_ARMCI_DIRECTORY_HPP
#define NICOFF_ARMCI_DIRECTORY_HPP

#include <nicoff/strided.hpp>

#include <cstdint>
#include <map>
#include <vector>

namespace nicoff::armci {

struct Slice {
    std::uint64_t base = 0;
    std::uint64_t size = 0;
    RemoteRegion region;
    const MemoryRegion *mr = nullptr; // a local piece's registration
    // With a method other than nic: a local piece's registration on the
    // strided engine's port, and every piece's HBNA target (none: buffers 0).
    const MemoryRegion *engine_mr = nullptr;
    HbnaAddress hbna;
};

struct Place {
    const Slice *slice = nullptr;
    std::uint64_t offset = 0;
};

class Directory {
public:
    explicit Directory(std::uint32_t procs = 1) : by_proc_(procs) {}

    std::uint32_t procs() const noexcept { return static_cast<std::uint32_t>(by_proc_.size()); }
    // EINVAL for a proc out of range, an empty or wrapping slice; EEXIST if
    // it overlaps one of the same proc.
    void add(std::uint32_t proc, const Slice &slice);
    // Forgets proc's slice starting at base; false if there is none.
    bool remove(std::uint32_t proc, std::uint64_t base);
    // The slice of proc holding all of [addr, addr + len) (len 0 counts as
    // 1); EINVAL for a proc out of range, EFAULT when no slice holds it.
    Place find(std::uint32_t proc, std::uint64_t addr, std::uint64_t len) const;
    // The same without throwing: slice null when none holds it.
    Place lookup(std::uint32_t proc, std::uint64_t addr, std::uint64_t len) const noexcept;

private:
    std::vector<std::map<std::uint64_t, Slice>> by_proc_;
};

} // namespace nicoff::armci

#endif
