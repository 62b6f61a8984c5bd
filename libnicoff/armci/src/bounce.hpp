// libarmci-nicoff: the space of the registered bounce buffer, shared by the
// requests in flight.  A local buffer the library did not register (stack,
// malloc) is copied through it instead of being registered for one call: a
// registration pins and unpins pages and takes the card's lock, which costs
// far more than copying a patch of a few pages (Documentation/armci.md).
// No MPI and no card here, so that the host unit tests cover it.
#ifndef NICOFF_ARMCI_BOUNCE_HPP
#define NICOFF_ARMCI_BOUNCE_HPP

#include <cstdint>
#include <map>
#include <optional>
#include <utility>

namespace nicoff::armci {

// First fit over [0, size), in multiples of align bytes; pieces given back
// merge with their free neighbours, so that the space is whole again once
// every piece is back, in whatever order they came.
class BounceSpace {
public:
    static constexpr std::uint64_t align = 64;

    explicit BounceSpace(std::uint64_t size);
    std::uint64_t size() const noexcept { return size_; }
    std::uint64_t free_bytes() const noexcept { return free_bytes_; }
    // The offset of a free piece of at least len bytes (len > 0), none when
    // no free run is that long.
    std::optional<std::uint64_t> take(std::uint64_t len);
    // Gives back what take(len) returned as off.
    void give(std::uint64_t off, std::uint64_t len);

private:
    std::uint64_t size_;
    std::uint64_t free_bytes_;
    std::map<std::uint64_t, std::uint64_t> free_; // offset -> length, no two adjacent
};

// A piece of a BounceSpace held until this is destroyed (or moved from).
class BounceLease {
public:
    BounceLease() = default;
    BounceLease(BounceSpace &space, std::uint64_t off, std::uint64_t len) noexcept
        : space_(&space), off_(off), len_(len) {}
    BounceLease(BounceLease &&o) noexcept
        : space_(std::exchange(o.space_, nullptr)), off_(o.off_), len_(o.len_) {}
    BounceLease &operator=(BounceLease &&o) noexcept {
        if (this != &o) {
            release();
            space_ = std::exchange(o.space_, nullptr);
            off_ = o.off_;
            len_ = o.len_;
        }
        return *this;
    }
    BounceLease(const BounceLease &) = delete;
    BounceLease &operator=(const BounceLease &) = delete;
    ~BounceLease() { release(); }

    explicit operator bool() const noexcept { return space_ != nullptr; }
    std::uint64_t offset() const noexcept { return off_; }

private:
    void release() noexcept {
        if (space_)
            space_->give(off_, len_);
        space_ = nullptr;
    }

    BounceSpace *space_ = nullptr;
    std::uint64_t off_ = 0, len_ = 0;
};

} // namespace nicoff::armci

#endif
