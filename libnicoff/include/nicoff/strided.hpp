// nicoff::Strided: non-contiguous put and get in ARMCI's terms (PutS and
// GetS, PutV and GetV), walked by the card (seed 004's NIC-based method),
// and the walk of a shape's contiguous chunks for methods that move them
// one by one.
#ifndef NICOFF_STRIDED_HPP
#define NICOFF_STRIDED_HPP

#include <nicoff/nicoff.hpp>

#include <array>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
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

// ---------------------------------------------------------------- methods --
// Seed 004's ways of moving a strided shape, chosen per operation:
//   nic        the card walks the shape (Strided above: one command)
//   hbna       host-based, NIC-assisted: this process packs into a bounce
//              buffer, the target card arbitrates the target's receive
//              buffers (a compare-swap on their flags), the packed bytes are
//              put there and a descriptor sent once they landed; the
//              target's StridedTarget thread unpacks (its CPU pays)
//   naive      one contiguous PUT or GET per chunk (the seed's reference)
//   automatic  ("auto") the cheaper of the others by seed 004's cost models
//              (StridedModel), calibrated on this card once and cached
enum class StridedMethod { nic, hbna, naive, automatic };

// The method's one word: "nic", "hbna", "naive", "auto".
NICOFF_API std::string_view method_name(StridedMethod m) noexcept;
// The method a word names (as method_name() spells it); nullopt otherwise.
NICOFF_API std::optional<StridedMethod> parse_strided_method(std::string_view word) noexcept;

// What a StridedTarget publishes for HBNA sources: its port, its receive
// buffers' region and their flag words' region (REMOTE_ATOMIC: the card
// compare-swaps them), how many buffers of how many bytes.  buffers == 0:
// the target has no StridedTarget (hbna is refused, auto never picks it).
struct HbnaAddress {
    std::uint32_t card = 0;
    std::uint32_t port = 0;
    std::uint32_t buf_rkey = 0;
    std::uint32_t flag_rkey = 0;
    std::uint32_t buffers = 0;
    std::uint64_t buffer_bytes = 0;
};

// The remote side of an operation by method: the region nic and naive
// address, and the StridedTarget serving the same bytes for hbna (its
// offsets are the region's).
struct StridedPeer {
    RemoteRegion region;
    HbnaAddress hbna;
};

// Seed 004 section 4's models, per card: the NIC-based method costs
// k * ts_nic + tn * N for k chunks of N bytes in all (1), naive
// k * ts_put + tn * N, HBNA ts_hbna + tn * N + 2 * tm * N (2).  Seconds and
// seconds per byte.
struct NICOFF_API StridedModel {
    double ts_nic = 0;
    double ts_put = 0;
    double tn = 0;
    double ts_hbna = 0;
    double tm = 0;

    // The predicted seconds of method m (nic, hbna or naive) for the shape.
    double predict(StridedMethod m, std::uint64_t chunks, std::uint64_t bytes) const noexcept;
    // The method with the smallest prediction; hbna only when allowed.
    StridedMethod choose(std::uint64_t chunks, std::uint64_t bytes, bool hbna) const noexcept;
    // The cache file's text ("name value" lines) and back; nullopt for a
    // text missing a parameter or holding a negative or non-number.
    std::string to_text() const;
    static std::optional<StridedModel> from_text(std::string_view text);
};

// Where card's model is cached: $XDG_CACHE_HOME/nicoff/strided-card<N>
// (~/.cache/nicoff/ without it; EINVAL with neither variable set).
NICOFF_API std::filesystem::path strided_cache_path(std::uint32_t card);

// The chunks and bytes of a shape (the product of the counts), EINVAL as
// for_each_chunk, EOVERFLOW when the product overflows.
struct ShapeSize {
    std::uint64_t chunks = 0;
    std::uint64_t bytes = 0;
};
NICOFF_API ShapeSize shape_size(std::span<const std::uint64_t> count);

// Calls fn(offset, bytes) for the pieces of side's chunks that hold bytes
// [from, from + len) of the shape's stream (its chunks in message order,
// back to back): what HBNA packs and unpacks one buffer at a time.
NICOFF_API void for_each_piece(std::span<const std::uint64_t> count, const StridedSide &side,
                               std::uint64_t from, std::uint64_t len,
                               const std::function<void(std::uint64_t, std::uint64_t)> &fn);

// The HBNA target: serves sources' packed pieces on the bytes of memory
// (those of the region its peers reach by rkey, offsets alike) from a
// thread of its own on a port of its own on card.  Owns `buffers` receive
// buffers of buffer_bytes and a flag word each; a flag is 0 while its
// buffer is free, a source sets it with the card's compare-swap, this
// thread clears it once it has unpacked (put, acc) or sent (get) the
// piece, then replies to the source.  Accumulates run here, doubles too.
class NICOFF_API StridedTarget {
public:
    struct Options {
        std::uint32_t buffers = 16;
        std::uint64_t buffer_bytes = 256 << 10;
    };
    struct Stats {
        std::uint64_t pieces = 0;        // descriptors served
        std::uint64_t bytes = 0;         // bytes unpacked or packed
        std::uint64_t unpack_cpu_ns = 0; // this thread's CPU time unpacking (put, acc)
        std::uint64_t pack_cpu_ns = 0;   // and packing (get)
    };

    StridedTarget(std::uint32_t card, std::span<std::byte> memory, Options opts);
    StridedTarget(std::uint32_t card, std::span<std::byte> memory)
        : StridedTarget(card, memory, Options{}) {}
    ~StridedTarget(); // stops the thread: sources' pieces in flight then fail
    StridedTarget(const StridedTarget &) = delete;
    StridedTarget &operator=(const StridedTarget &) = delete;

    HbnaAddress address() const noexcept;
    Stats stats() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// How a StridedEngine runs the host-side methods.
struct StridedOptions {
    std::uint32_t naive_window = 256; // naive: contiguous commands in flight, all operations
    std::uint32_t hbna_slots = 8;     // hbna: pieces in flight (bounce buffers), all operations
    std::uint64_t hbna_piece = 0;     // hbna: bytes per piece; 0: the target's buffer size
    bool hbna_pipelined = true;       // false: one piece at a time (copy-transmit-copy)
};

// One finished operation: the caller's tag, 0 or a negative errno, the
// bytes moved, and the method that ran (auto resolved).
struct StridedDone {
    std::uint64_t tag = 0;
    std::int32_t status = 0;
    std::uint64_t bytes = 0;
    StridedMethod method = StridedMethod::nic;
};

// Strided put, get and accumulate by method on one port, which it owns:
// every completion of the port is the engine's (post nothing else on it).
// start_*() begins an operation and returns; poll() and wait_any() move
// every operation on and hand back the finished ones with the caller's
// tag.  put(), get() and acc() wait for their own and throw its error
// (std::system_error); others finishing meanwhile are kept for poll().
// Bad shapes, a local side outside its region, hbna without a target and
// auto's calibration failing throw at once.  Single-threaded.
class NICOFF_API StridedEngine {
public:
    explicit StridedEngine(Port &port, StridedOptions opts = {});
    ~StridedEngine();
    StridedEngine(const StridedEngine &) = delete;
    StridedEngine &operator=(const StridedEngine &) = delete;

    void start_put(StridedMethod m, const MemoryRegion &local, const StridedSide &src,
                   const StridedPeer &peer, const StridedSide &dst,
                   std::span<const std::uint64_t> count, std::uint64_t tag);
    void start_get(StridedMethod m, const StridedPeer &peer, const StridedSide &src,
                   const MemoryRegion &local, const StridedSide &dst,
                   std::span<const std::uint64_t> count, std::uint64_t tag);
    // ARMCI's AccS: acc NICOFF_ACC_INT32, INT64 (the scale as is) or DOUBLE
    // (the scale converted); nic and naive run it on the card (integers
    // only), hbna in the target's thread.
    void start_acc(StridedMethod m, std::uint32_t acc, std::int64_t scale,
                   const MemoryRegion &local, const StridedSide &src, const StridedPeer &peer,
                   const StridedSide &dst, std::span<const std::uint64_t> count, std::uint64_t tag);

    void put(StridedMethod m, const MemoryRegion &local, const StridedSide &src,
             const StridedPeer &peer, const StridedSide &dst, std::span<const std::uint64_t> count);
    void get(StridedMethod m, const StridedPeer &peer, const StridedSide &src,
             const MemoryRegion &local, const StridedSide &dst,
             std::span<const std::uint64_t> count);
    void acc(StridedMethod m, std::uint32_t acc, std::int64_t scale, const MemoryRegion &local,
             const StridedSide &src, const StridedPeer &peer, const StridedSide &dst,
             std::span<const std::uint64_t> count);

    // Finished operations into out (as many as fit), without waiting.
    std::size_t poll(std::span<StridedDone> out);
    // The next finished operation; ETIMEDOUT after timeout without progress.
    StridedDone wait_any(std::chrono::milliseconds timeout = std::chrono::milliseconds(30000));
    std::size_t in_flight() const noexcept;

    // What auto runs for this shape and peer (the others: themselves).
    StridedMethod resolve(StridedMethod m, std::span<const std::uint64_t> count,
                          const StridedPeer &peer);
    // The card's model: loaded from the cache file, or measured (and
    // cached) the first time; NICOFF_STRIDED_CALIBRATE=1 in the environment
    // measures again.  calibrate() measures now and rewrites the cache.
    const StridedModel &model();
    const StridedModel &calibrate();
    // Takes m as the card's model from now on, measuring nothing and
    // leaving the cache file as it is: for the ranks of a job that share
    // one rank's measurement (every card of the job lives in one kernel).
    void use_model(const StridedModel &m);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace nicoff

#endif
