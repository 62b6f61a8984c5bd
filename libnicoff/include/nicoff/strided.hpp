// nicoff::Strided: non-contiguous put and get in ARMCI's terms (PutS and
// GetS), walked by the card (seed 004's NIC-based method), and the walk of
// a shape's contiguous chunks for methods that move them one by one.
#ifndef NICOFF_STRIDED_HPP
#define NICOFF_STRIDED_HPP

#include <nicoff/nicoff.hpp>

#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace nicoff {

// A peer's registered memory: (card, port) and the region's rkey.
struct RemoteRegion {
    std::uint32_t card = 0;
    std::uint32_t port = 0;
    std::uint32_t rkey = 0;
};

// One side of a strided transfer: where it starts in its region, and the
// byte distance between its blocks at each level (stride[i - 1] for level
// i, as ARMCI's stride_arr).
struct StridedSide {
    std::uint64_t offset = 0;
    std::span<const std::uint64_t> stride;
};

// The shape's count array, ARMCI's: count[0] contiguous bytes, count[i]
// blocks at level i; levels = count.size() - 1, at most
// NICOFF_STRIDED_MAX_LEVELS.  Calls fn(local_offset, remote_offset, bytes)
// for each chunk in message order (the lowest level fastest).  EINVAL for
// too many levels or a stride array shorter than the levels.
NICOFF_API void
for_each_chunk(std::span<const std::uint64_t> count, const StridedSide &local,
               const StridedSide &remote,
               const std::function<void(std::uint64_t, std::uint64_t, std::uint64_t)> &fn);

// Posts strided puts and gets on one port.  The card reads each command's
// shape from memory this object registers on the port: one descriptor slot
// more than the command ring has entries, used in turn, so that a slot is
// written again only once the card has taken the command that named it
// (the ring cannot hold that command and all those posted since).  Every
// command of the port must be posted through the port's one producer, as
// the port's rules say anyway.
class NICOFF_API Strided {
public:
    explicit Strided(Port &port);
    Strided(Strided &&) noexcept;
    Strided &operator=(Strided &&) noexcept;
    Strided(const Strided &) = delete;
    Strided &operator=(const Strided &) = delete;
    ~Strided();

    // False when the command ring is full; throws EINVAL for a bad shape
    // (levels, a stride array shorter than them) and EIO in the error state.
    // The completion, with tag, carries the bytes moved or the card's error.
    bool try_put(const MemoryRegion &local, const StridedSide &src, const RemoteRegion &remote,
                 const StridedSide &dst, std::span<const std::uint64_t> count, std::uint64_t tag);
    bool try_get(const RemoteRegion &remote, const StridedSide &src, const MemoryRegion &local,
                 const StridedSide &dst, std::span<const std::uint64_t> count, std::uint64_t tag);
    // ARMCI's AccS on integers: each destination element plus scale times the
    // source's (acc NICOFF_ACC_INT32 or INT64; count[0] whole elements); the
    // card refuses NICOFF_ACC_DOUBLE (it does no floating point).
    bool try_acc(std::uint32_t acc, std::int64_t scale, const MemoryRegion &local,
                 const StridedSide &src, const RemoteRegion &remote, const StridedSide &dst,
                 std::span<const std::uint64_t> count, std::uint64_t tag);

private:
    bool post(std::uint8_t opcode, const MemoryRegion &local, const StridedSide &local_side,
              const RemoteRegion &remote, const StridedSide &remote_side,
              std::span<const std::uint64_t> count, std::uint64_t tag, std::uint32_t acc = 0,
              std::int64_t scale = 0);
    Port *port_;
    std::vector<nicoff_strided_desc> slots_;
    MemoryRegion mr_;
    std::size_t next_ = 0;
};

} // namespace nicoff

#endif
