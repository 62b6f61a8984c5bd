// libnicoff C++ API (C++20).
//
// A nicoff card is a char device, /dev/nicoffN.  A Device is an open file on
// it that answers queries; a Port opens a file of its own and turns it into
// a port: a command ring the process fills and a completion ring the card
// fills, both mapped into the process, so that posting a command and
// polling for its completion cost no system call.  The card thread sleeps
// when it has nothing to do and says so in the command ring's header; only
// then does posting ring the doorbell (the KICK ioctl).
//
// Errors
//   Every throwing function throws std::system_error whose code() is in
//   std::generic_category() and holds an errno value: EINVAL (bad argument),
//   ENOENT (no such card), ENOTTY (not a nicoff device), EPROTO (the kernel
//   module speaks another ABI version), EAGAIN (command ring full), EIO (the
//   port is in the error state), or whatever the kernel answered.  The hot
//   paths have noexcept variants: try_post, try_post_batch, poll.
//
// Thread safety
//   Device, MemoryRegion: const functions from any thread.
//   Port is a single-producer/single-consumer object without locks.  It has
//   two sides:
//     posting side:    try_post, try_post_batch, post, post_batch, nop, copy,
//                      fetch_add, swap, compare_swap, free_slots
//     completion side: poll, ready, wait
//   At most one thread at a time may be inside the posting side, and at most
//   one thread at a time inside the completion side; the two may be
//   different threads running at the same time (one thread posts while
//   another polls).  Everything else (fd, number, cmd_entries, cq_entries,
//   kicks, in_error, stats, wait_fd, register_memory) is safe from any
//   thread at any time.  Several posting threads, or several polling
//   threads, need a SharedPort (one mutex per side) or a lock of their own.
//   RegionMap: see its comment; lookups are lock-free from any thread.
//
// Lifetimes
//   A MemoryRegion keeps its port's file open, so it may outlive the Port
//   object (its destructor then still deregisters on the right file); the
//   port itself closes when the Port and all its regions are gone.
#ifndef NICOFF_NICOFF_HPP
#define NICOFF_NICOFF_HPP

#include <nicoff/nicoff.h>
#include <nicoff/prep.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

namespace nicoff {

inline constexpr std::uint32_t abi_version = NICOFF_ABI_VERSION;

// NICOFF_IOC_QUERY.
struct DeviceInfo {
    std::uint32_t abi_version = 0;
    std::uint32_t card = 0;
    std::uint32_t num_cards = 0;
    std::uint32_t max_ports = 0;
    std::uint32_t max_ring_entries = 0;
    std::uint32_t max_mrs = 0;
};

struct PortConfig {
    std::uint32_t port = NICOFF_PORT_ANY; // wanted port number
    std::uint32_t cmd_entries = 256;      // power of two >= 2
    std::uint32_t cq_entries = 0;         // power of two >= cmd_entries; 0: cmd_entries
};

// NICOFF_IOC_PORT_STATS.
struct PortStats {
    std::uint64_t cmds = 0;     // commands consumed by the card
    std::uint64_t cqes = 0;     // completions posted by the card
    std::uint64_t kicks = 0;    // KICK ioctls the kernel received
    std::uint64_t bad_cmds = 0; // commands completed with an error
    std::uint64_t cq_full = 0;  // card passes stalled by a full completion ring
};

// Command builders: <nicoff/prep.h>'s, returning the command.
inline nicoff_cmd make_nop(std::uint64_t tag) noexcept {
    nicoff_cmd c;
    nicoff_prep_nop(&c, tag);
    return c;
}

inline nicoff_cmd make_copy(std::uint32_t src_mr, std::uint64_t src_off, std::uint32_t dst_mr,
                            std::uint64_t dst_off, std::uint64_t len, std::uint64_t tag) noexcept {
    nicoff_cmd c;
    nicoff_prep_copy(&c, src_mr, src_off, dst_mr, dst_off, len, tag);
    return c;
}

// A message to (card, port): completes once the destination card has it all.
inline nicoff_cmd make_send(std::uint32_t card, std::uint32_t port, std::uint32_t mr,
                            std::uint64_t off, std::uint64_t len, std::uint64_t msg_tag,
                            std::uint64_t tag) noexcept {
    nicoff_cmd c;
    nicoff_prep_send(&c, card, port, mr, off, len, msg_tag, tag);
    return c;
}

// A receive buffer: takes the first message from (src_card, src_port)
// (NICOFF_ANY: any) whose tag matches msg_tag on the bits of tag_mask.
inline nicoff_cmd make_recv(std::uint32_t mr, std::uint64_t off, std::uint64_t len,
                            std::uint32_t src_card, std::uint32_t src_port, std::uint64_t msg_tag,
                            std::uint64_t tag_mask, std::uint64_t tag) noexcept {
    nicoff_cmd c;
    nicoff_prep_recv(&c, mr, off, len, src_card, src_port, msg_tag, tag_mask, tag);
    return c;
}

// Put (NICOFF_OP_PUT) or get (NICOFF_OP_GET) len bytes between the local
// region mr at off and the peer's region rkey at remote_off.
inline nicoff_cmd make_rdma(std::uint8_t opcode, std::uint32_t card, std::uint32_t port,
                            std::uint32_t rkey, std::uint64_t remote_off, std::uint32_t mr,
                            std::uint64_t off, std::uint64_t len, std::uint64_t tag) noexcept {
    nicoff_cmd c;
    nicoff_prep_rdma(&c, opcode, card, port, rkey, remote_off, mr, off, len, tag);
    return c;
}

// A naturally aligned word of a peer's registered memory: seed 001's (node,
// port, address) triple, the address being an offset in the region named by
// rkey.  width is 4 or 8.  What remote atomics and the locks address.
struct RemoteWord {
    std::uint32_t card = 0;
    std::uint32_t port = 0;
    std::uint32_t rkey = 0;
    std::uint32_t width = 8;
    std::uint64_t offset = 0;
    // The word delta bytes further on.
    constexpr RemoteWord at(std::uint64_t delta) const noexcept {
        RemoteWord w = *this;
        w.offset += delta;
        return w;
    }
    friend constexpr bool operator==(const RemoteWord &, const RemoteWord &) = default;
};

// A remote atomic (NICOFF_OP_FETCH_ADD, NICOFF_OP_FETCH_WRITE or
// NICOFF_OP_COMPARE_SWAP) on w, executed by the target card; the
// completion's result is the word's old value.  See Documentation/atomics.md.
inline nicoff_cmd make_atomic(std::uint8_t opcode, const RemoteWord &w, std::uint64_t operand,
                              std::uint64_t compare, std::uint64_t tag) noexcept {
    nicoff_cmd c;
    nicoff_prep_atomic(&c, opcode, w.card, w.port, w.rkey, w.offset, w.width, operand, compare,
                       tag);
    return c;
}

// word += value
inline nicoff_cmd make_fetch_add(const RemoteWord &w, std::uint64_t value,
                                 std::uint64_t tag) noexcept {
    return make_atomic(NICOFF_OP_FETCH_ADD, w, value, 0, tag);
}

// word = value (fetch&write)
inline nicoff_cmd make_swap(const RemoteWord &w, std::uint64_t value, std::uint64_t tag) noexcept {
    return make_atomic(NICOFF_OP_FETCH_WRITE, w, value, 0, tag);
}

// if (word == compare) word = swap
inline nicoff_cmd make_compare_swap(const RemoteWord &w, std::uint64_t compare, std::uint64_t swap,
                                    std::uint64_t tag) noexcept {
    return make_atomic(NICOFF_OP_COMPARE_SWAP, w, swap, compare, tag);
}

// A round trip to (card, port) answered by that card alone, no process
// involved: the completion's result is its time in ns on this card's clock.
inline nicoff_cmd make_ping(std::uint32_t card, std::uint32_t port, std::uint64_t tag) noexcept {
    nicoff_cmd c;
    nicoff_prep_ping(&c, card, port, tag);
    return c;
}

// A strided put or get (NICOFF_OP_PUT_STRIDED or GET_STRIDED), walked by the
// card: see struct nicoff_op_strided.
inline nicoff_cmd make_strided(std::uint8_t opcode, const nicoff_op_strided &op,
                               std::uint64_t tag) noexcept {
    nicoff_cmd c;
    nicoff_prep_strided(&c, opcode, &op, tag);
    return c;
}

namespace detail {
struct FileDesc;
class Dispatcher;
} // namespace detail

class Port;

// An open nicoff char device.  The constructor queries the card and throws
// EPROTO unless the module speaks NICOFF_ABI_VERSION.
class NICOFF_API Device {
public:
    explicit Device(unsigned card);    // /dev/nicoff<card>
    explicit Device(std::string path); // any path
    static std::string path_for(unsigned card);

    Device(Device &&other) noexcept;
    Device &operator=(Device &&other) noexcept;
    Device(const Device &) = delete;
    Device &operator=(const Device &) = delete;
    ~Device();

    const std::string &path() const noexcept { return path_; }
    int fd() const noexcept { return fd_; }
    const DeviceInfo &info() const noexcept { return info_; } // as queried at open
    DeviceInfo query() const;                                 // asks again

private:
    std::string path_;
    int fd_ = -1;
    DeviceInfo info_;
};

class MemoryRegion;

// A port: its own open file on the card and both ring mappings.  See the
// thread-safety rules at the top of this file.  A moved-from Port may only
// be assigned to or destroyed.
class NICOFF_API Port {
public:
    explicit Port(const Device &dev, const PortConfig &cfg = {});
    explicit Port(unsigned card, const PortConfig &cfg = {});

    Port(Port &&other) noexcept;
    Port &operator=(Port &&other) noexcept;
    Port(const Port &) = delete;
    Port &operator=(const Port &) = delete;
    ~Port();

    // --- posting side ------------------------------------------------------
    // Posts one command.  False when the command ring is full or the port
    // is in the error state (in_error() tells which).  Never blocks.
    bool try_post(const nicoff_cmd &cmd) noexcept;
    // Posts the longest prefix that fits; publishes the producer index once
    // and rings the doorbell at most once.  Returns how many were posted.
    std::size_t try_post_batch(std::span<const nicoff_cmd> cmds) noexcept;
    // Throwing forms: post() throws EAGAIN when the ring is full;
    // post_batch() returns 0 when the ring is full; both throw EIO in the
    // error state.
    void post(const nicoff_cmd &cmd);
    std::size_t post_batch(std::span<const nicoff_cmd> cmds);
    // post() of a NOP, or of a COPY of len bytes from src at src_off to dst
    // at dst_off (both regions of this port; EINVAL if a range is outside
    // its region or a region belongs to another port).
    void nop(std::uint64_t tag);
    void copy(const MemoryRegion &src, std::uint64_t src_off, const MemoryRegion &dst,
              std::uint64_t dst_off, std::uint64_t len, std::uint64_t tag);
    // post() of a remote atomic on w (make_fetch_add, make_swap,
    // make_compare_swap); EINVAL for a width other than 4 or 8 or, with
    // width 4, an operand above 32 bits.  The completion's result is the
    // old value.
    void fetch_add(const RemoteWord &w, std::uint64_t value, std::uint64_t tag);
    void swap(const RemoteWord &w, std::uint64_t value, std::uint64_t tag);
    void compare_swap(const RemoteWord &w, std::uint64_t compare, std::uint64_t swap,
                      std::uint64_t tag);
    // Free command slots right now (0 in the error state).
    std::uint32_t free_slots() noexcept;

    // --- completion side ---------------------------------------------------
    // Drains up to out.size() completions without blocking; returns how many.
    // In the error state it still hands out what the card completed before
    // (the last one has opcode NICOFF_OP_PORT_ERROR), then returns 0.
    // The card takes a command only when the completion ring has room, so
    // it may sleep on a full completion ring with commands pending: when
    // poll() frees slots in that case it rings the doorbell itself (one
    // KICK ioctl, counted by kicks()); it never sleeps.
    std::size_t poll(std::span<nicoff_cqe> out) noexcept;
    // Completions ready to be polled?
    bool ready() noexcept;
    // Blocks until ready() (true) or the timeout (false); a negative timeout
    // waits forever.  Throws EIO once the port is in the error state and its
    // completion ring is empty.
    bool wait(std::chrono::milliseconds timeout = std::chrono::milliseconds(-1));

    // --- any thread ----------------------------------------------------------
    // Sleeps in poll(2) on the port file until the kernel reports POLLIN
    // (true) or the timeout (false), without looking at the ring; throws EIO
    // on POLLERR without POLLIN.  This is what wait() uses after its own
    // ready() check; SharedPort uses it to sleep without holding a lock.
    bool wait_fd(std::chrono::milliseconds timeout) const;
    bool in_error() const noexcept;
    std::uint64_t kicks() const noexcept; // KICK ioctls this object made (both sides)
    PortStats stats() const;
    int fd() const noexcept;             // for poll/epoll (POLLIN: completions; POLLERR: error)
    std::uint32_t card() const noexcept; // the card it is a port of
    std::uint32_t number() const noexcept;
    std::uint32_t cmd_entries() const noexcept;
    std::uint32_t cq_entries() const noexcept;

    MemoryRegion register_memory(std::span<std::byte> bytes, std::uint32_t access);

    // The completion side's dispatcher (the library's own, in
    // src/dispatch.hpp): Group, HostBarrier, CardMemory, HostMemory and
    // AtomicServer tag their commands with an owner id and take their
    // completions through it, so several of them can share the port.
    // Completions of tags the application chose come out of it as
    // unknown (EPROTO): keep the application's own commands off a port
    // while those helpers wait on it.
    detail::Dispatcher &dispatcher() noexcept;

private:
    friend class MemoryRegion;
    void kick() noexcept;
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// A registered (pinned) memory region of a port: deregistered by the
// destructor.  Empty when default-constructed or moved from.
class NICOFF_API MemoryRegion {
public:
    MemoryRegion() noexcept;
    // EINVAL for an empty span or unknown access bits; else the kernel's error.
    MemoryRegion(Port &port, std::span<std::byte> bytes, std::uint32_t access);

    MemoryRegion(MemoryRegion &&other) noexcept;
    MemoryRegion &operator=(MemoryRegion &&other) noexcept;
    MemoryRegion(const MemoryRegion &) = delete;
    MemoryRegion &operator=(const MemoryRegion &) = delete;
    ~MemoryRegion();

    // Deregisters now and reports the kernel's error; the region is empty
    // afterwards even when this throws.
    void deregister();

    bool valid() const noexcept { return fd_ != nullptr; }
    explicit operator bool() const noexcept { return valid(); }
    std::uint32_t handle() const noexcept { return handle_; }
    std::uint32_t rkey() const noexcept { return rkey_; }
    std::uint32_t access() const noexcept { return access_; }
    std::span<std::byte> bytes() const noexcept { return bytes_; }
    std::byte *data() const noexcept { return bytes_.data(); }
    std::size_t size() const noexcept { return bytes_.size(); }
    bool belongs_to(const Port &port) const noexcept;

private:
    std::shared_ptr<const detail::FileDesc> fd_;
    std::span<std::byte> bytes_;
    std::uint32_t handle_ = 0;
    std::uint32_t rkey_ = 0;
    std::uint32_t access_ = 0;
};

// A Port for several threads: one mutex for the posting side and one for
// the completion side, so posters never wait for pollers.  wait() sleeps
// without holding either mutex.  port() gives the underlying Port for the
// functions that are safe from any thread; calling its posting or
// completion side directly bypasses the locks.
class NICOFF_API SharedPort {
public:
    explicit SharedPort(Port &&port);
    SharedPort(const Device &dev, const PortConfig &cfg = {});

    bool try_post(const nicoff_cmd &cmd);
    std::size_t try_post_batch(std::span<const nicoff_cmd> cmds);
    void post(const nicoff_cmd &cmd);
    std::size_t post_batch(std::span<const nicoff_cmd> cmds);
    std::size_t poll(std::span<nicoff_cqe> out);
    bool wait(std::chrono::milliseconds timeout = std::chrono::milliseconds(-1));

    Port &port() noexcept { return port_; }
    const Port &port() const noexcept { return port_; }

private:
    Port port_;
    alignas(64) std::mutex post_mu_;
    alignas(64) std::mutex poll_mu_;
};

// Address -> registered region lookup for many reader threads.
//
// Lookups take no lock: the table is liburcu's RCU lock-free hash table
// (rculfhash) with the "bulletproof" flavour (liburcu-bp), so a reader
// thread needs no registration at all: liburcu-bp registers a thread on its
// first lookup and forgets it when the thread exits.  Writers (insert,
// erase) serialize on a mutex of their own; erase() also waits for an RCU
// grace period, so it blocks for as long as the lookups in flight take.
//
// Keying: the address space is cut into granules of 2^granule_shift bytes;
// a region gets one hash node per granule it touches, keyed by the granule
// number.  A lookup hashes the granule of the address, walks the (few) nodes
// of that granule and checks each region's range, so small regions may
// share a granule and a large region is found from any granule it covers.
// Regions must not overlap (insert throws EEXIST).
//
// lookup() copies the entry out inside the RCU read-side section, so the
// result stays valid to read after erase(); erase() returns only after a
// grace period, i.e. when no lookup can still be looking at the region.  A
// lookup concurrent with insert() or erase() of the same region may see it
// or not.  Remove a region from the map before deregistering it.
class NICOFF_API RegionMap {
public:
    struct Entry {
        std::uintptr_t addr = 0;
        std::size_t length = 0;
        std::uint32_t handle = 0;
        std::uint32_t rkey = 0;
        std::uint32_t access = 0;
        void *user = nullptr; // caller's cookie, returned by lookup
        bool contains(std::uintptr_t a, std::size_t len = 1) const noexcept {
            return a >= addr && a - addr < length && len <= length - (a - addr);
        }
    };

    static constexpr unsigned default_granule_shift = 16; // 64 KiB

    // granule_shift in [12, 40]; EINVAL otherwise.
    explicit RegionMap(unsigned granule_shift = default_granule_shift);
    RegionMap(const RegionMap &) = delete;
    RegionMap &operator=(const RegionMap &) = delete;
    // Must not run while lookups on this map are in flight.
    ~RegionMap();

    // EINVAL for an empty or wrapping range, EEXIST for an overlap.
    void insert(const Entry &entry);
    void insert(const MemoryRegion &mr, void *user = nullptr);
    // Removes the region starting at base; false if there is none.
    bool erase(std::uintptr_t base);
    bool erase(const void *base) { return erase(reinterpret_cast<std::uintptr_t>(base)); }

    // The region holding all of [addr, addr + len) (len 0 counts as 1).
    std::optional<Entry> lookup(std::uintptr_t addr, std::size_t len = 1) const noexcept;
    std::optional<Entry> lookup(const void *addr, std::size_t len = 1) const noexcept {
        return lookup(reinterpret_cast<std::uintptr_t>(addr), len);
    }

    std::size_t size() const noexcept;
    std::size_t granule_size() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace nicoff

// nicoff::Job: ranks, sizes and the rank -> (card, port) mapping of a job.
#include <nicoff/job.hpp>
// nicoff::CardMemory, HostMemory, AtomicServer, McsLock, TasLock: remote
// atomics used synchronously, and the locks built on them.
#include <nicoff/atomic.hpp>
// nicoff::Group, nicoff::HostBarrier: process groups and their barriers.
#include <nicoff/group.hpp>

#endif // NICOFF_NICOFF_HPP
