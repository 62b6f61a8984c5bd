// libnicoff: process groups and barriers (C++20).
//
// A Group is a collective group on a port: its members' (card, port) list,
// this process's rank in it and an id every member uses.  The card runs
// the group's barriers (seed 000's NIC-based collective protocol; see
// Documentation/barrier.md): barrier() posts one NICOFF_OP_BARRIER and
// waits for its one completion, spinning briefly and then asleep in
// poll(2), costing no CPU while the other members are late.
//
//   nicoff::Job job = nicoff::Job::from_env();
//   nicoff::Port port = job.open_port();
//   nicoff::Group group(port, job);                 // every rank, same order
//   group.barrier();
//
// The algorithm is chosen by number (NICOFF_BARRIER_*), by name
// (barrier_algorithm_from_name), or left to the card: NICOFF_BARRIER_AUTO
// times every algorithm at creation and keeps the fastest, and
// NICOFF_BARRIER_DEFAULT (the default) runs what the module's barrier_alg
// tunable says.  algorithm() and param() tell what the card chose.
//
// HostBarrier runs the same algorithms in the process instead, over the
// card's SEND/RECV (the host-based barriers the seed papers compare with).
//
// Broadcast (seed 002; Documentation/broadcast.md): every member calls
// broadcast() for the group's broadcasts in the same order, each with the
// same root and length; the root's bytes end up in every member's buffer.
// The form taking a MemoryRegion moves the data straight from and to the
// region (zero copy); the span form goes through a registered bounce
// buffer the group keeps (grown on demand), costing a copy on each side.
// start_broadcast() posts without waiting and returns a BcastRequest:
// several may be outstanding, and they complete in posting order.  A
// root's broadcast of up to NICOFF_BCAST_EAGER_MAX bytes completes once
// sent, before the others hold it, and the group's members do not
// acknowledge each broadcast: destroy a group only once every member is
// done with its broadcasts (a barrier), as a member that destroys it fails
// what the others still wait for (ECONNRESET).
// HostBroadcast is the host-based baseline: a binomial tree the processes
// run over SEND/RECV (seed 002's "generic" LA-MPI algorithm).
//
// Completions: a Group or HostBarrier tags its commands with an owner id of
// its port's dispatcher (Port::dispatcher()); while it waits, it takes
// every completion of the port and hands each to its owner, so Groups,
// HostBarriers and the atomics (nicoff/atomic.hpp) may share a port.  A
// completion of no such owner (an application's own command) throws
// EPROTO: keep those off the port while they run.  Errors: std::system_error in
// std::generic_category() with the errno of the completion (ETIMEDOUT: a member fell silent;
// ECONNRESET: a member's group failed or went away; EINVAL, ENODEV,
// EEXIST, ENOSPC at creation, see abi.md), or ETIME when the caller's own
// timeout passed.
#ifndef NICOFF_GROUP_HPP
#define NICOFF_GROUP_HPP

#include <nicoff/nicoff.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nicoff {

// "auto", "pairwise", "dissemination", "tree", "central", "combining",
// "tournament", "default"; "?" for anything else.
NICOFF_API std::string_view barrier_algorithm_name(std::uint32_t alg) noexcept;
// The inverse (numbers accepted too); nullopt for an unknown name.
NICOFF_API std::optional<std::uint32_t> barrier_algorithm_from_name(std::string_view name) noexcept;

// The id the ranks of a job agree on for the n-th group they create: a
// hash of the job id and n (FNV-1a, 32 bits).
NICOFF_API std::uint32_t job_group_id(const std::string &job_id, std::uint32_t n) noexcept;

struct GroupConfig {
    std::uint32_t algorithm = NICOFF_BARRIER_DEFAULT;
    std::uint32_t param = 0; // tree degree or combining fan-in; 0: the card's default
    // How long one command may take before the call throws ETIME; negative:
    // no limit of the caller's (the card bounds a barrier with a dead member).
    std::chrono::milliseconds timeout{-1};
    // Poll the completion ring this long before sleeping in poll(2).
    std::chrono::microseconds spin{20};
    // Broadcast channels of the group: 0 for the card's default (the
    // module's bcast_channels), else NICOFF_BCAST_MIN_CHANNELS to
    // NICOFF_BCAST_MAX_CHANNELS.
    std::uint32_t bcast_channels = 0;
    // NICOFF_BCAST_F_NOCRC (no CRC over broadcast payloads), NICOFF_BCAST_F_P2P
    // (always the point-to-point tree, never the fabric's multicast).
    std::uint32_t bcast_flags = 0;
    // With NICOFF_BARRIER_AUTO: true times the candidates again on this
    // process's own barriers after the cards' trials
    // (NICOFF_GROUP_F_HOST_TRIALS), which the constructor runs before it
    // returns (about 120), so that waking up to see a barrier end and
    // entering the next weigh in the choice as they do in a program: one
    // they time clearly faster overrules the cards' pick.  false: only the
    // cards' trials (Documentation/barrier.md).
    bool host_trials = false;
};

class Group;

// A broadcast posted by Group::start_broadcast().  wait() returns its
// length once this member holds the data (the root: once it may reuse its
// buffer) and throws the completion's error; test() says whether it is
// done without sleeping.  A request that is destroyed unwaited waits for
// its broadcast first (errors ignored), so the group's bounce buffer is
// never left to a broadcast nobody collects; its buffer must stay valid
// until then.  Requests may be waited in any order; a request outlives its
// Group safely (it then reports what completed before the group went, or
// ECANCELED).  Single-threaded, as the Group.
class NICOFF_API BcastRequest {
public:
    BcastRequest() noexcept = default;
    BcastRequest(BcastRequest &&other) noexcept;
    BcastRequest &operator=(BcastRequest &&other) noexcept;
    BcastRequest(const BcastRequest &) = delete;
    BcastRequest &operator=(const BcastRequest &) = delete;
    ~BcastRequest();

    std::uint64_t wait();
    bool test();
    bool valid() const noexcept { return state_ != nullptr; }

    struct State; // shared with its Group

private:
    friend class Group;
    BcastRequest(std::shared_ptr<State> state, std::uint64_t seq) noexcept
        : state_(std::move(state)), seq_(seq) {}
    void release() noexcept;
    std::shared_ptr<State> state_;
    std::uint64_t seq_ = 0;
};

class NICOFF_API Group {
public:
    // Every member calls this with the same member list and group id and
    // its own rank; returns once every member has created the group (and,
    // with auto, the card has chosen).  port must outlive the Group.
    Group(Port &port, std::span<const nicoff_member> members, std::uint32_t rank,
          std::uint32_t group_id, const GroupConfig &cfg = {});
    // The group of all ranks of job (placements by rank), id
    // job_group_id(job.id(), n) with n counting the groups this process
    // created from any Job so far.
    Group(Port &port, const Job &job, const GroupConfig &cfg = {});

    Group(Group &&other) noexcept;
    Group &operator=(Group &&other) noexcept;
    Group(const Group &) = delete;
    Group &operator=(const Group &) = delete;
    ~Group(); // destroy(), errors ignored

    // One barrier: returns once every member has entered it.
    void barrier();
    // Post the barrier without waiting; wait_barrier() waits for it.
    void start_barrier();
    void wait_barrier();
    // Whether the posted barrier completed, without sleeping (true: as
    // wait_barrier() would have returned, errors thrown the same way).
    bool test_barrier();
    bool barrier_pending() const noexcept { return pending_; }
    // GROUP_DESTROY; the Group is empty afterwards.  Broadcasts still
    // outstanding complete with the card's error (ECANCELED).
    void destroy();

    // One broadcast of len bytes at off of mr (a region of this port, with
    // NICOFF_ACCESS_LOCAL_WRITE on the receivers) from member root: returns
    // once this member's part is done.  EINVAL for a root outside the group
    // or a range outside mr; the card's errors (EMSGSIZE: the root's length
    // differs; ECONNRESET: the group failed; ETIMEDOUT: a member is dead).
    void broadcast(const MemoryRegion &mr, std::uint64_t off, std::uint64_t len,
                   std::uint32_t root);
    // The same for any memory, through the group's bounce buffer: the root
    // sends buf, the others receive into it (buf.size() is the length).
    void broadcast(std::span<std::byte> buf, std::uint32_t root);
    // Post a broadcast without waiting (the region or buffer must stay
    // valid until the request completes).
    [[nodiscard]] BcastRequest start_broadcast(const MemoryRegion &mr, std::uint64_t off,
                                               std::uint64_t len, std::uint32_t root);
    [[nodiscard]] BcastRequest start_broadcast(std::span<std::byte> buf, std::uint32_t root);

    bool valid() const noexcept { return port_ != nullptr; }
    std::uint32_t id() const noexcept { return id_; }
    std::uint32_t rank() const noexcept { return rank_; }
    std::uint32_t size() const noexcept { return size_; }
    std::uint32_t algorithm() const noexcept { return alg_; } // what the card runs
    std::uint32_t param() const noexcept { return param_; }   // its degree or fan-in
    std::uint64_t barriers() const noexcept { return done_; } // completed so far
    std::uint64_t broadcasts() const noexcept;                // posted so far

private:
    friend class BcastRequest;
    BcastRequest post_bcast(std::uint32_t mr, std::uint64_t off, std::uint64_t len,
                            std::uint32_t root, std::span<std::byte> out, int bounce);
    bool bcast_done(std::uint64_t seq, bool block);
    void take_ready();
    bool on_bcast_completion(const nicoff_cqe &c) noexcept;
    void cancel_bcasts() noexcept;
    void create(std::span<const nicoff_member> members);
    nicoff_cqe create_with_trials(const nicoff_cmd &cmd);
    void release() noexcept;
    void on_completion(const nicoff_cqe &c) noexcept;
    void await(const std::function<bool()> &done);
    nicoff_cqe run(const nicoff_cmd &cmd);
    void post_for_reply(const nicoff_cmd &cmd);
    void post(const nicoff_cmd &cmd);

    Port *port_ = nullptr;
    std::uint16_t owner_ = 0; // in the port's dispatcher
    GroupConfig cfg_;
    std::uint32_t id_ = 0;
    std::uint32_t rank_ = 0;
    std::uint32_t size_ = 0;
    std::uint32_t alg_ = 0;
    std::uint32_t param_ = 0;
    std::uint64_t done_ = 0;
    std::uint64_t next_tag_ = 1;
    bool pending_ = false; // a barrier runs
    // What on_completion() found for the waits.
    struct Waits {
        std::uint64_t barrier_tag = 0; // the running barrier's
        std::optional<nicoff_cqe> barrier_done;
        std::uint64_t want = 0; // run()'s command's
        std::optional<nicoff_cqe> reply;
        bool stray = false; // a completion of ours that nobody expects
    } waits_;
    std::shared_ptr<BcastRequest::State> bcast_; // the broadcasts in flight
};

namespace detail {

// What HostBarrier and HostBroadcast (H) share: a member list checked as
// the card checks a group's, an owner id in the port's dispatcher that
// hands H::on_completion() the port's completions, the SENDs in flight,
// and what the waits report (the first failed completion, a stray one).
template <class H>
class HostCollective {
protected:
    struct Error {
        int err = 0;
        const char *what = nullptr;
    };
    HostCollective(Port &port, std::span<const nicoff_member> members, std::uint32_t rank,
                   const GroupConfig &cfg);
    HostCollective(HostCollective &&o) noexcept;
    ~HostCollective() = default;
    // Move assignment of H: this one destroyed, then moved into.
    H &replace(H &&o) noexcept;
    // Takes the port's completions from now on (the last step of H's
    // constructor, so that a failed one leaves no owner behind).
    void attach(Port &port);
    // H's destructor, while its regions are still registered: waits for
    // the SENDs in flight, so that their completions do not turn up as
    // strangers to whoever polls the port next, then leaves the dispatcher.
    void detach() noexcept;
    // Posts c, dispatching completions while the ring is full.
    void post(const nicoff_cmd &c);
    // Keeps c's error if it is the first.
    void record(const nicoff_cqe &c, const char *what) noexcept;
    // Dispatches until done(); ETIME when no completion came for
    // cfg.timeout, EPROTO for a stray completion, and the first error a
    // completion brought.
    void await(const std::function<bool()> &done);

    Port *port_ = nullptr;
    std::uint16_t owner_ = 0; // in the port's dispatcher
    GroupConfig cfg_;
    std::vector<nicoff_member> members_;
    std::uint32_t rank_ = 0;
    std::uint64_t epoch_ = 0;     // barriers or broadcasts run
    std::uint64_t sends_out_ = 0; // SENDs not completed yet
    Error error_;                 // the first failed completion
    bool stray_ = false;          // a completion of ours that nobody expects
};

} // namespace detail

// The same algorithms run by the process over SEND/RECV: every message a
// zero-byte SEND, received by a RECV posted at the start of the barrier
// (tag: the barrier's number).  NICOFF_BARRIER_AUTO and DEFAULT are not
// algorithms here (EINVAL).
class NICOFF_API HostBarrier : detail::HostCollective<HostBarrier> {
public:
    HostBarrier(Port &port, std::span<const nicoff_member> members, std::uint32_t rank,
                std::uint32_t algorithm, std::uint32_t param = 0, const GroupConfig &cfg = {});
    HostBarrier(Port &port, const Job &job, std::uint32_t algorithm, std::uint32_t param = 0,
                const GroupConfig &cfg = {});
    HostBarrier(HostBarrier &&) noexcept;
    HostBarrier &operator=(HostBarrier &&) noexcept;
    ~HostBarrier();

    void barrier();
    std::uint32_t algorithm() const noexcept { return alg_; }
    std::uint64_t barriers() const noexcept { return epoch_; }

private:
    friend class detail::HostCollective<HostBarrier>;
    static constexpr const char *name = "HostBarrier";
    struct Msg {
        std::uint32_t rank;
        std::uint32_t step;
    };
    void on_completion(const nicoff_cqe &c) noexcept;

    std::uint32_t alg_ = 0;
    std::vector<Msg> sends_, recvs_; // by step
    std::vector<std::uint32_t> need_;
    std::uint32_t nsteps_ = 0;
    std::vector<std::byte> buf_;
    MemoryRegion mr_;
    std::vector<std::uint32_t> got_; // receives completed per step, this barrier
};

// A broadcast run by the processes: a binomial tree rooted at the
// broadcast's root over SEND/RECV (seed 002's "generic" algorithm).  Each
// member posts a RECV from its parent (tag: the broadcast's number), then
// SENDs the whole message to its children, largest subtree first, and
// returns once its SENDs completed (the children's cards hold the data),
// so the buffer may be reused at once.  Any root, any length the card's
// messages take (64 MiB by default), 0 included.  Same member list and
// rank conventions as HostBarrier; errors as Group's.
class NICOFF_API HostBroadcast : detail::HostCollective<HostBroadcast> {
public:
    HostBroadcast(Port &port, std::span<const nicoff_member> members, std::uint32_t rank,
                  const GroupConfig &cfg = {});
    HostBroadcast(Port &port, const Job &job, const GroupConfig &cfg = {});
    HostBroadcast(HostBroadcast &&) noexcept;
    HostBroadcast &operator=(HostBroadcast &&) noexcept;
    HostBroadcast(const HostBroadcast &) = delete;
    HostBroadcast &operator=(const HostBroadcast &) = delete;
    ~HostBroadcast();

    // As Group::broadcast: a region of this port (zero copy), or any
    // memory through a bounce buffer of this object's.
    void broadcast(const MemoryRegion &mr, std::uint64_t off, std::uint64_t len,
                   std::uint32_t root);
    void broadcast(std::span<std::byte> buf, std::uint32_t root);
    std::uint32_t rank() const noexcept { return rank_; }
    std::uint32_t size() const noexcept { return static_cast<std::uint32_t>(members_.size()); }
    std::uint64_t broadcasts() const noexcept { return epoch_; }

private:
    friend class detail::HostCollective<HostBroadcast>;
    static constexpr const char *name = "HostBroadcast";
    void on_completion(const nicoff_cqe &c) noexcept;

    bool received_ = false; // this broadcast's RECV completed
    std::uint64_t got_ = 0; // its length
    std::vector<std::byte> bounce_;
    MemoryRegion bounce_mr_;
};

// One member's place in the binomial broadcast tree of a group of size
// rooted at root: its parent (none for the root) and its children, largest
// subtree first (the order it sends in).  Relative rank v = (rank - root)
// mod size receives from v with its lowest set bit cleared and sends to
// v + 2^k for every 2^k below that bit (every 2^k < size for the root).
struct BcastTree {
    std::optional<std::uint32_t> parent;
    std::vector<std::uint32_t> children;
};
NICOFF_API BcastTree bcast_tree(std::uint32_t root, std::uint32_t rank, std::uint32_t size);

// The schedule of one member (what Group's card and HostBarrier both
// run): for each step, the ranks it sends to on entering the step and the
// ranks whose messages end it.
struct BarrierStep {
    std::vector<std::uint32_t> send;
    std::vector<std::uint32_t> recv;
};
NICOFF_API std::vector<BarrierStep> barrier_schedule(std::uint32_t algorithm, std::uint32_t param,
                                                     std::uint32_t rank, std::uint32_t size);

} // namespace nicoff

#endif // NICOFF_GROUP_HPP
