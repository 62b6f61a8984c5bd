// nicoff::Strided: non-contiguous put and get in ARMCI's terms (PutS and
// GetS, PutV and GetV), walked by the card (seed 004's NIC-based method),
// and the walk of a shape's contiguous chunks for methods that move them
// one by one.
#ifndef NICOFF_STRIDED_HPP
#define NICOFF_STRIDED_HPP

#include <nicoff/nicoff.hpp>

#include <array>
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

// One segment of a vector put or get: bytes moved between local_offset of
// the local region and remote_offset of the remote one.
struct Segment {
    std::uint64_t local_offset = 0;
    std::uint64_t remote_offset = 0;
    std::uint64_t bytes = 0;
};

// ARMCI's armci_giov_t with region offsets for pointers: ptr_array_len
// segments of bytes each, src_off_array[i] to dst_off_array[i].
struct Giov {
    std::span<const std::uint64_t> src;
    std::span<const std::uint64_t> dst;
    std::uint64_t bytes = 0;
};

// The segments of ARMCI's list of giov descriptors, in order: for a put
// (put) the sources are local, for a get the destinations are.  EINVAL if
// a descriptor's arrays differ in length.
NICOFF_API std::vector<Segment> segments_of(std::span<const Giov> list, bool put);

// Posts strided and vector puts and gets on one port.  The card reads each command's
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
    // ARMCI's PutV and GetV: each segment in turn between the local region
    // and the remote one, one command of at most NICOFF_VECTOR_MAX_SEGS
    // segments (EINVAL above: split a longer list).  The first vector call
    // registers the lists' slots, as many as the strided shapes'.
    bool try_put_vector(const MemoryRegion &local, const RemoteRegion &remote,
                        std::span<const Segment> segments, std::uint64_t tag);
    bool try_get_vector(const RemoteRegion &remote, const MemoryRegion &local,
                        std::span<const Segment> segments, std::uint64_t tag);

private:
    bool post(std::uint8_t opcode, const MemoryRegion &local, const StridedSide &local_side,
              const RemoteRegion &remote, const StridedSide &remote_side,
              std::span<const std::uint64_t> count, std::uint64_t tag, std::uint32_t acc = 0,
              std::int64_t scale = 0);
    bool post_vector(std::uint8_t opcode, const MemoryRegion &local, const RemoteRegion &remote,
                     std::span<const Segment> segments, std::uint64_t tag);
    // Posts op (its descriptor in slot next_); false when the ring is full.
    bool post_cmd(std::uint8_t opcode, const nicoff_op_strided &op, std::uint64_t tag);
    using VectorSlot = std::array<nicoff_vector_seg, NICOFF_VECTOR_MAX_SEGS>;
    Port *port_;
    std::vector<nicoff_strided_desc> slots_;
    MemoryRegion mr_;
    std::vector<VectorSlot> vslots_; // empty until the first vector call
    MemoryRegion vmr_;
    std::size_t next_ = 0;
};

} // namespace nicoff

#endif
