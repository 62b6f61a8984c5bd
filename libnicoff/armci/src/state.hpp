// libarmci-nicoff: the process's ARMCI state between ARMCI_Init and
// ARMCI_Finalize, and the request machinery of the one-sided calls.
//
// Two ports on this rank's card (card = world rank % cards, as the MPI
// library places ranks):
//   rma   every ARMCI_Malloc piece is registered here; puts, gets, strided
//         and vector commands are posted here and their completions taken
//         by this library's own loop (progress()), by tag = request id.
//   sync  the card group (barrier, broadcast) and CardMemory (Rmw, the
//         mutexes, the lock behind floating-point accumulates): helpers
//         that take their completions through the port's dispatcher, which
//         refuses completions of tags it did not hand out, so they may not
//         share a port with the RMA commands.
// With a strided method other than nic (NICOFF_ARMCI_STRIDED; the default,
// auto, is one), a third:
//   engine  a nicoff::StridedEngine, which owns the port's completions,
//           runs strided calls by that method; every piece and local buffer
//           is registered there too, and with hbna or auto each piece is
//           served by a StridedTarget (a thread on a port of its own).
// Everything is single-threaded, as ARMCI_Init (MPI_THREAD_SINGLE) says.
#ifndef NICOFF_ARMCI_STATE_HPP
#define NICOFF_ARMCI_STATE_HPP

#include "abi.hpp"
#include "bounce.hpp"
#include "config.hpp"
#include "directory.hpp"

#include <nicoff/atomic.hpp>
#include <nicoff/group.hpp>
#include <nicoff/strided.hpp>

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace nicoff::armci {

// The memory of an ARMCI_Malloc (or _group) in every process: this
// process's piece (mapped here, registered on the rma port) and where
// every other process's piece lives.
struct Allocation {
    void *base = nullptr; // this process's piece, null for 0 bytes
    std::size_t size = 0;
    MemoryRegion mr;
    MemoryRegion engine_mr;                // on the engine's port (a method other than nic)
    std::unique_ptr<StridedTarget> target; // serving the piece (hbna, auto)
    std::vector<Slice> pieces;             // by world rank; size 0 for a process without one
};

// A local buffer as a command needs it: a registered region and the
// offset of the buffer in it.  Memory the library registered (ARMCI_Malloc,
// ARMCI_Malloc_local) is used in place; anything else (stack, malloc) is
// registered for the request's lifetime (temp), see Documentation/armci.md.
struct LocalBuf {
    const MemoryRegion *mr = nullptr;
    std::uint64_t offset = 0;
    std::optional<MemoryRegion> temp;
};

// The local side of a strided (or contiguous) transfer as its commands take
// it: a registered region, the side's offset in it and its strides there
// (the caller's, or the packed ones in the bounce buffer).
struct LocalSide {
    const MemoryRegion *mr = nullptr;
    std::uint64_t offset = 0;
    std::vector<std::uint64_t> stride;
};

// The registered bounce buffer (NICOFF_ARMCI_BOUNCE bytes): its memory, the
// space the requests share, and its registrations on the rma port and on
// the engine's.
struct Bounce {
    explicit Bounce(std::uint64_t size) : bytes(size), space(size) {}
    std::vector<std::byte> bytes;
    BounceSpace space;
    MemoryRegion mr, engine_mr;
};

// One ARMCI call in flight on the rma port: its commands (tag = id), what
// it keeps alive until they complete, and what runs then (a get's unpack).
struct Request {
    std::uint64_t id = 0;
    std::uint32_t target = 0;
    unsigned outstanding = 0;
    int err = 0;                   // first failed completion (negative errno)
    std::list<MemoryRegion> temps; // a list: the commands hold pointers to them
    std::vector<std::byte> bounce; // packed data of vector calls the bounce buffer cannot take
    BounceLease lease;             // its piece of the bounce buffer
    std::function<void()> finish;
};

class State {
public:
    State(); // collective over MPI_COMM_WORLD
    ~State();
    State(const State &) = delete;
    State &operator=(const State &) = delete;

    std::uint32_t me = 0, nproc = 0;
    StridedMethod method = StridedMethod::nic;
    MPI_Comm comm = MPI_COMM_NULL; // ARMCI's own duplicate of MPI_COMM_WORLD
    std::optional<Port> rma, sync, engine_port;
    std::optional<Strided> strided;
    std::optional<StridedEngine> engine; // a method other than nic
    std::optional<CardMemory> mem;
    std::optional<Group> group; // every world rank, on the sync ports
    Directory remote;           // every process's ARMCI_Malloc pieces
    Directory local;            // this process's registered memory (proc 0)
    std::list<Allocation> allocs;
    // ARMCI_Malloc_local: the registration on the rma port, and on the
    // engine's when there is one.
    std::map<void *, std::pair<MemoryRegion, MemoryRegion>> local_allocs;
    // Per process: the word guarding its memory for floating-point
    // accumulates (a TasLock).
    std::vector<RemoteWord> acc_lock;
    std::vector<std::uint64_t> sys_words;
    MemoryRegion sys_mr;
    // ARMCI_Create_mutexes: every process's mutex words.
    std::vector<std::uint64_t> mutex_words;
    MemoryRegion mutex_mr;
    std::vector<RemoteWord> mutex_base; // by world rank
    int mutex_count = 0;
    std::optional<Bounce> bounce; // none with NICOFF_ARMCI_BOUNCE=0

    // --- requests ----------------------------------------------------------
    Request &start(std::uint32_t target);
    // Posts through try_post (a command of request r), making progress while
    // the command ring is full.
    void post(Request &r, const std::function<bool()> &try_post);
    // Starts an operation of request r on the strided engine (tag r.id).
    void post_engine(Request &r, const std::function<void()> &start);
    // The request is fully posted: completes at once if nothing is
    // outstanding.  Returns its id.
    std::uint64_t seal(Request &r);
    // start(), post_all, seal(); if post_all throws, waits for what it
    // posted before passing the error on.  Returns the request's id.
    std::uint64_t run(std::uint32_t target, const std::function<void(Request &)> &post_all);
    // Takes every completion ready; true if there was one.
    bool progress();
    // Waits until no request selected by pick is left, returns the first
    // error of those (negative errno, 0).
    int wait(const std::function<bool(const Request &)> &pick);
    int wait_id(std::uint64_t id);
    // Whether a request selected by pick is still in flight (no progress).
    bool busy(const std::function<bool(const Request &)> &pick) const;
    int wait_all() {
        return wait([](const Request &) { return true; });
    }

    // --- memory ------------------------------------------------------------
    Place remote_place(int proc, const void *addr, std::uint64_t len) const;
    RemoteWord word(int proc, const void *addr, std::uint32_t width) const;
    // written: the card writes the buffer (a get), else only reads it.
    // On the engine's port (on_engine) or the rma port.
    LocalBuf local_buf(const void *addr, std::uint64_t len, bool written, bool on_engine = false);
    // The local side (shape count, strides stride, at addr) of request r:
    // in place in memory the library registered; else packed in the bounce
    // buffer while it has room (a put's bytes copied now, a get's copied out
    // when r completes); else registered for r's lifetime (local_buf).
    LocalSide local_side(Request &r, void *addr, std::span<const std::uint64_t> count,
                         std::span<const std::uint64_t> stride, bool written,
                         bool on_engine = false);
    // Registers this process's bytes for the others (a piece): every right
    // on the rma port; on the engine's port, with a target if the method
    // needs one.
    void expose(Allocation &a);

private:
    void setup(); // the constructor's collective steps
    void complete(Request &r);
    void completed(std::uint64_t tag, std::int32_t status); // one command or operation
    void sleep();                                           // until a port has a completion
    std::map<std::uint64_t, Request> pending_;
    std::map<std::uint64_t, std::pair<std::uint32_t, int>> failed_; // id -> (target, err)
    std::uint64_t next_id_ = 1;
};

// The state, or EINVAL (not initialised) for calls before ARMCI_Init.
State &state();
bool initialised() noexcept;

// Runs f for the ARMCI call named call: an exception becomes a line on
// stderr and the returned error (a positive errno), 0 when f returns.
int guarded(const char *call, const std::function<void()> &f) noexcept;
// The same for calls that return nothing: an error aborts the job, as
// ARMCI-MPI does (ARMCI has no way to report it).
void must(const char *call, const std::function<void()> &f) noexcept;
[[noreturn]] void fail(int err, const std::string &what);
// ARMCI_Init's and ARMCI_Finalize's: make and drop the state.
void make_state();
void drop_state();
// proc as a world rank, EINVAL out of range.
std::uint32_t proc_of(int proc);

} // namespace nicoff::armci

#endif
