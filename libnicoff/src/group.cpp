// nicoff::Group (barriers and broadcasts run by the card), nicoff::HostBarrier
// (the same barrier algorithms run by the process over SEND/RECV) and
// nicoff::HostBroadcast (a binomial-tree broadcast run by the process).
#include "barrier_sched.h"
#include "dispatch.hpp"

#include <nicoff/group.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <charconv>
#include <cstring>
#include <deque>
#include <new>
#include <utility>

namespace nicoff {

namespace {

// A completion the library makes itself for a broadcast that never got one.
nicoff_cqe cancelled_bcast() noexcept {
    nicoff_cqe c{};
    c.status = -ECANCELED;
    c.opcode = NICOFF_OP_BCAST;
    return c;
}

constexpr std::array<std::string_view, NICOFF_BARRIER_MAX> alg_names = [] {
    std::array<std::string_view, NICOFF_BARRIER_MAX> n{};
#define NICOFF_BARRIER_ALG(alg, name) n[NICOFF_BARRIER_##alg] = #name;
#include <nicoff/nicoff_lists.h>
#undef NICOFF_BARRIER_ALG
    return n;
}();

std::atomic<std::uint32_t> job_groups{0};

using detail::Dispatcher;

[[noreturn]] void fail(int err, const std::string &what) { detail::throw_errno(err, what); }

void check_status(const nicoff_cqe &c, const char *what) {
    if (c.status < 0)
        fail(-c.status, std::string("nicoff: ") + what + " failed");
}

// Waits for a completion as the group's configuration says: polls the
// ring for cfg.spin (yielding the CPU between looks), then sleeps in
// poll(2); false once the deadline has passed.
bool await(Port &port, const GroupConfig &cfg, detail::Deadline deadline, bool respin,
           const std::function<bool()> &done) {
    const detail::Pacing p{.spin = cfg.spin, .pause_looks = 0, .respin = respin};
    return port.dispatcher().wait_until(done, deadline, p);
}

std::vector<nicoff_member> job_members(const Job &job) {
    std::vector<nicoff_member> m(job.size());
    for (std::uint32_t r = 0; r < job.size(); r++) {
        const Placement p = job.placement_of(r);
        m[r] = nicoff_member{p.card, p.port};
    }
    return m;
}

// HostBarrier's tags, below its owner id: a SEND, or a RECV of a step.
constexpr std::uint64_t tag_send = 1ull << 47;
constexpr std::uint64_t tag_recv = 1ull << 46;

std::uint64_t run_tag(std::uint64_t epoch) { return 0xb0ull << 56 | (epoch & 0xffffffffffffull); }

// HostBroadcast's message tags: the broadcast's number under a marker of
// its own, so that a HostBarrier on the same port never matches them.
std::uint64_t host_bcast_tag(std::uint64_t epoch) {
    return 0xbcull << 56 | (epoch & 0xffffffffffffull);
}

// Group's broadcasts: this bit and the broadcast's number in the local tag
// (run()'s and the barriers' tags count from 1 and never reach it).
constexpr std::uint64_t tag_bcast = 1ull << 47;
constexpr std::uint64_t bcast_seq_mask = tag_bcast - 1;

// The smallest bounce buffer, so that small broadcasts of different
// lengths share one.
constexpr std::size_t bounce_min = 4096;

void check_range(const MemoryRegion &mr, const Port &port, std::uint64_t off, std::uint64_t len,
                 const char *who) {
    if (!mr.valid() || !mr.belongs_to(port))
        fail(EINVAL, std::string("nicoff: ") + who + ": the region is not this port's");
    if (off > mr.size() || len > mr.size() - off)
        fail(EINVAL, std::string("nicoff: ") + who + ": the range is outside the region");
}

} // namespace

std::string_view barrier_algorithm_name(std::uint32_t alg) noexcept {
    if (alg < NICOFF_BARRIER_MAX)
        return alg_names[alg];
    return alg == NICOFF_BARRIER_DEFAULT ? "default" : "?";
}

std::optional<std::uint32_t> barrier_algorithm_from_name(std::string_view name) noexcept {
    for (std::uint32_t a = 0; a < NICOFF_BARRIER_MAX; a++)
        if (name == alg_names[a])
            return a;
    if (name == "default")
        return NICOFF_BARRIER_DEFAULT;
    std::uint32_t v = 0;
    const auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), v);
    if (ec == std::errc() && p == name.data() + name.size() &&
        (v < NICOFF_BARRIER_MAX || v == NICOFF_BARRIER_DEFAULT))
        return v;
    return std::nullopt;
}

std::uint32_t job_group_id(const std::string &job_id, std::uint32_t n) noexcept {
    std::uint32_t h = 2166136261u;
    auto mix = [&h](unsigned char c) {
        h ^= c;
        h *= 16777619u;
    };
    for (const char c : job_id)
        mix(static_cast<unsigned char>(c));
    mix(0);
    for (int i = 0; i < 4; i++)
        mix(static_cast<unsigned char>(n >> (8 * i)));
    return h;
}

std::vector<BarrierStep> barrier_schedule(std::uint32_t algorithm, std::uint32_t param,
                                          std::uint32_t rank, std::uint32_t size) {
    if (!size || rank >= size)
        fail(EINVAL, "nicoff: barrier_schedule: rank outside the group");
    switch (algorithm) {
    case NICOFF_BARRIER_TREE:
        if (param == 1)
            fail(EINVAL, "nicoff: a tree needs a degree of at least 2");
        break;
    case NICOFF_BARRIER_COMBINING:
        if (param == 1) // a fan-in of 1 never combines anything
            fail(EINVAL, "nicoff: a combining tree needs a fan-in of at least 2");
        break;
    case NICOFF_BARRIER_PAIRWISE:
    case NICOFF_BARRIER_DISSEMINATION:
    case NICOFF_BARRIER_CENTRAL:
    case NICOFF_BARRIER_TOURNAMENT:
        break;
    default:
        fail(EINVAL, "nicoff: no such barrier algorithm");
    }
    std::vector<BarrierStep> steps;
    auto msg = [](void *ctx, int recv, std::uint32_t r, std::uint32_t step) {
        auto &v = *static_cast<std::vector<BarrierStep> *>(ctx);
        if (v.size() <= step)
            v.resize(step + 1);
        (recv ? v[step].recv : v[step].send).push_back(r);
    };
    const int n = nicoff_bsched_walk(algorithm, param, rank, size, msg, &steps);
    if (n < 0)
        fail(-n, "nicoff: barrier_schedule");
    steps.resize(static_cast<std::size_t>(n));
    return steps;
}

BcastTree bcast_tree(std::uint32_t root, std::uint32_t rank, std::uint32_t size) {
    if (!size || root >= size || rank >= size)
        fail(EINVAL, "nicoff: bcast_tree: root or rank outside the group");
    const std::uint32_t v = (rank + size - root) % size;
    auto real = [&](std::uint64_t x) {
        return static_cast<std::uint32_t>((x + root) % size);
    };
    BcastTree t;
    // The root's subtrees are all powers of two below size; another
    // member's, those below its lowest set bit.
    std::uint64_t top = std::bit_ceil(static_cast<std::uint64_t>(size));
    if (v) {
        const std::uint32_t low = v & (~v + 1);
        t.parent = real(v - low);
        top = low;
    }
    // Child v + m heads min(m, size - v - m) members: the largest first, so
    // that the deepest subtree starts earliest (ties: the farther first).
    std::vector<std::pair<std::uint64_t, std::uint64_t>> kids; // (members, m)
    for (std::uint64_t m = top / 2; m >= 1; m /= 2)
        if (v + m < size)
            kids.emplace_back(std::min<std::uint64_t>(m, size - v - m), m);
    std::stable_sort(kids.begin(), kids.end(),
                     [](const auto &a, const auto &b) { return a.first > b.first; });
    for (const auto &[members, m] : kids)
        t.children.push_back(real(v + m));
    return t;
}

// ------------------------------------------------------- BcastRequest --

// A group's broadcasts in flight, shared with their requests so that a
// request may outlive (or see the move of) its Group.
struct BcastRequest::State {
    struct Entry {
        std::optional<nicoff_cqe> done;
        std::span<std::byte> out; // a receiver's buffer the bounce data goes to
        int bounce = -1;          // the bounce buffer it uses, if any
        std::uint64_t len = 0;
        bool collected = false; // its request let go
    };
    struct Bounce {
        std::vector<std::byte> mem;
        MemoryRegion mr;
        bool busy = false;
    };
    Group *group = nullptr; // null once the group is gone
    std::deque<Entry> q;    // broadcasts first .. posted - 1
    std::uint64_t first = 0;
    std::uint64_t posted = 0;
    std::vector<Bounce> pool;

    Entry *find(std::uint64_t seq) noexcept {
        return seq >= first && seq - first < q.size() ? &q[seq - first] : nullptr;
    }
    // A completion for broadcast seq: a receiver's bounce data goes out,
    // the bounce buffer is free again.
    void complete(Entry &e, const nicoff_cqe &c) noexcept {
        e.done = c;
        if (e.bounce >= 0) {
            Bounce &b = pool[static_cast<std::size_t>(e.bounce)];
            if (c.status >= 0 && !e.out.empty())
                std::memcpy(e.out.data(), b.mem.data(), e.out.size());
            b.busy = false;
            e.bounce = -1;
        }
    }
    void drop_collected() noexcept {
        while (!q.empty() && q.front().collected && q.front().done) {
            q.pop_front();
            first++;
        }
    }
    // A free bounce buffer of at least len bytes, registered on port.
    int bounce_for(Port &port, std::uint64_t len) {
        int best = -1;
        for (std::size_t i = 0; i < pool.size(); i++)
            if (!pool[i].busy && pool[i].mem.size() >= len &&
                (best < 0 || pool[i].mem.size() < pool[static_cast<std::size_t>(best)].mem.size()))
                best = static_cast<int>(i);
        if (best >= 0)
            return best;
        Bounce b;
        b.mem.resize(std::max<std::size_t>(bounce_min, std::bit_ceil(len)));
        b.mr = MemoryRegion(port, b.mem, NICOFF_ACCESS_LOCAL_WRITE);
        pool.push_back(std::move(b));
        return static_cast<int>(pool.size() - 1);
    }
};

BcastRequest::BcastRequest(BcastRequest &&o) noexcept : state_(std::move(o.state_)), seq_(o.seq_) {}

BcastRequest &BcastRequest::operator=(BcastRequest &&o) noexcept {
    if (this != &o) {
        release();
        state_ = std::move(o.state_);
        seq_ = o.seq_;
    }
    return *this;
}

BcastRequest::~BcastRequest() { release(); }

// Waits for the broadcast (errors ignored) and lets it go.
void BcastRequest::release() noexcept {
    if (!state_)
        return;
    State &s = *state_;
    State::Entry *e = s.find(seq_);
    if (e && !e->done && s.group) {
        try {
            s.group->bcast_done(seq_, true);
        } catch (...) {
        }
        e = s.find(seq_);
    }
    if (e) {
        e->collected = true;
        e->out = {}; // a completion after this must not write into it
        s.drop_collected();
    }
    state_.reset();
}

std::uint64_t BcastRequest::wait() {
    if (!state_)
        fail(EINVAL, "nicoff: BcastRequest: no broadcast");
    State &s = *state_;
    const State::Entry *e = s.find(seq_);
    if (e && !e->done && s.group)
        s.group->bcast_done(seq_, true);
    e = s.find(seq_);
    const nicoff_cqe c = e && e->done ? *e->done : cancelled_bcast();
    release();
    check_status(c, "BCAST");
    return c.result;
}

bool BcastRequest::test() {
    if (!state_)
        fail(EINVAL, "nicoff: BcastRequest: no broadcast");
    State &s = *state_;
    const State::Entry *e = s.find(seq_);
    if (!e || e->done || !s.group)
        return true;
    return s.group->bcast_done(seq_, false);
}

// --------------------------------------------------------------- Group --

Group::Group(Port &port, std::span<const nicoff_member> members, std::uint32_t rank,
             std::uint32_t group_id, const GroupConfig &cfg)
    : port_(&port), cfg_(cfg), id_(group_id), rank_(rank),
      size_(static_cast<std::uint32_t>(members.size())) {
    if (members.empty() || members.size() > UINT32_MAX || rank >= members.size())
        fail(EINVAL, "nicoff: Group: rank outside the member list");
    create(members);
}

Group::Group(Port &port, const Job &job, const GroupConfig &cfg)
    : port_(&port), cfg_(cfg), id_(job_group_id(job.id(), job_groups.fetch_add(1))),
      rank_(job.rank()), size_(job.size()) {
    create(job_members(job));
}

void Group::create(std::span<const nicoff_member> members) {
    bcast_ = std::make_shared<BcastRequest::State>();
    bcast_->group = this;
    owner_ = port_->dispatcher().add([this](const nicoff_cqe &c) { on_completion(c); });
    std::vector<nicoff_member> table(members.begin(), members.end());
    nicoff_cqe q;
    try {
        MemoryRegion mr(*port_, std::as_writable_bytes(std::span<nicoff_member>(table)), 0);
        // run() gives it its tag.
        nicoff_cmd c;
        nicoff_prep_group_create_bcast(&c, id_, rank_, size_, mr.handle(), 0, cfg_.algorithm,
                                       cfg_.param, cfg_.bcast_channels, cfg_.bcast_flags, 0);
        if (cfg_.algorithm == NICOFF_BARRIER_AUTO && cfg_.host_trials) {
            c.group.flags = NICOFF_GROUP_F_HOST_TRIALS;
            q = create_with_trials(c);
        } else {
            q = run(c);
        }
        check_status(q, "GROUP_CREATE");
    } catch (...) {
        release();
        throw;
    }
    alg_ = static_cast<std::uint32_t>(q.result);
    param_ = static_cast<std::uint32_t>(q.result >> 32);
}

// GROUP_CREATE with NICOFF_GROUP_F_HOST_TRIALS: the trial barriers, one at
// a time while it is pending, until one says none is left; then its reply.
// A failed creation fails the trial barrier waiting too: the creation's
// reply tells why.
nicoff_cqe Group::create_with_trials(const nicoff_cmd &cmd) {
    post_for_reply(cmd);
    for (;;) {
        start_barrier();
        await([this] { return waits_.barrier_done.has_value(); });
        pending_ = false;
        if (waits_.barrier_done->status || !waits_.barrier_done->result)
            break;
    }
    await([this] { return waits_.reply.has_value(); });
    waits_.want = 0;
    if (!waits_.reply->status)
        check_status(*waits_.barrier_done, "BARRIER");
    return *waits_.reply;
}

// The port's dispatcher no longer knows the group.
void Group::release() noexcept {
    if (port_)
        port_->dispatcher().remove(owner_);
    port_ = nullptr;
    pending_ = false;
    cancel_bcasts();
}

// The card completes a destroyed group's broadcasts (ECANCELED) before
// GROUP_DESTROY; any it did not, and any after a failed destroy, are
// cancelled here, so that their requests do not wait for nothing.
void Group::cancel_bcasts() noexcept {
    if (!bcast_)
        return;
    for (BcastRequest::State::Entry &e : bcast_->q)
        if (!e.done)
            bcast_->complete(e, cancelled_bcast());
    bcast_->drop_collected();
    bcast_->group = nullptr;
}

Group::Group(Group &&o) noexcept { *this = std::move(o); }

Group &Group::operator=(Group &&o) noexcept {
    if (this != &o) {
        if (port_) {
            try {
                destroy();
            } catch (...) {
            }
        }
        port_ = std::exchange(o.port_, nullptr);
        owner_ = o.owner_;
        cfg_ = o.cfg_;
        id_ = o.id_;
        rank_ = o.rank_;
        size_ = o.size_;
        alg_ = o.alg_;
        param_ = o.param_;
        done_ = o.done_;
        next_tag_ = o.next_tag_;
        pending_ = std::exchange(o.pending_, false);
        waits_ = o.waits_;
        bcast_ = std::move(o.bcast_);
        if (bcast_ && bcast_->group)
            bcast_->group = this;
        if (port_)
            port_->dispatcher().set(owner_, [this](const nicoff_cqe &c) { on_completion(c); });
    }
    return *this;
}

Group::~Group() {
    if (!port_)
        return;
    try {
        destroy();
    } catch (...) {
    }
}

// The reply to run()'s command, the running barrier's completion (also
// when DESTROY cancels it), or an error.
void Group::on_completion(const nicoff_cqe &c) noexcept {
    if (waits_.want && c.tag == waits_.want && !waits_.reply)
        waits_.reply = c;
    else if (pending_ && c.tag == waits_.barrier_tag && c.opcode == NICOFF_OP_BARRIER &&
             !waits_.barrier_done)
        waits_.barrier_done = c;
    else if (!on_bcast_completion(c))
        waits_.stray = true;
}

bool Group::on_bcast_completion(const nicoff_cqe &c) noexcept {
    const std::uint64_t local = Dispatcher::local(c.tag);
    if (c.opcode != NICOFF_OP_BCAST || !(local & tag_bcast) || !bcast_)
        return false;
    BcastRequest::State::Entry *e = bcast_->find(local & bcast_seq_mask);
    if (!e || e->done)
        return false;
    bcast_->complete(*e, c);
    bcast_->drop_collected();
    return true;
}

void Group::await(const std::function<bool()> &done) {
    const bool ok = nicoff::await(*port_, cfg_, detail::Deadline::after(cfg_.timeout), false,
                                  [&] { return waits_.stray || done(); });
    if (waits_.stray) {
        waits_.stray = false;
        fail(EPROTO, "nicoff: Group: a completion of none of its operations");
    }
    if (!ok)
        fail(ETIME, "nicoff: no completion within the group's timeout");
}

// Posts, taking completions while the ring is full (yielding as it waits).
void Group::post(const nicoff_cmd &cmd) {
    if (port_->try_post(cmd))
        return;
    const detail::Pacing p{.spin = detail::Clock::duration::max(), .pause_looks = 0};
    port_->dispatcher().wait_until([&] { return port_->try_post(cmd); }, detail::Deadline::never(),
                                   p);
}

// Posts cmd with a tag of its own, whose completion will be waits_.reply.
void Group::post_for_reply(const nicoff_cmd &cmd) {
    nicoff_cmd c = cmd;
    c.tag = Dispatcher::tag(owner_, next_tag_++);
    waits_.want = c.tag;
    waits_.reply.reset();
    post(c);
}

nicoff_cqe Group::run(const nicoff_cmd &cmd) {
    post_for_reply(cmd);
    await([this] { return waits_.reply.has_value(); });
    waits_.want = 0;
    return *waits_.reply;
}

void Group::start_barrier() {
    if (!port_)
        fail(EINVAL, "nicoff: Group: destroyed");
    if (pending_)
        fail(EBUSY, "nicoff: Group: a barrier is already running");
    nicoff_cmd c;
    nicoff_prep_barrier(&c, id_, Dispatcher::tag(owner_, next_tag_++));
    waits_.barrier_tag = c.tag;
    waits_.barrier_done.reset();
    post(c);
    pending_ = true;
}

void Group::wait_barrier() {
    if (!pending_)
        fail(EINVAL, "nicoff: Group: no barrier running");
    await([this] { return waits_.barrier_done.has_value(); });
    pending_ = false;
    check_status(*waits_.barrier_done, "BARRIER");
    done_++;
}

// Hands out the completions the port holds now, without sleeping; EPROTO
// for one of ours that nobody expects.
void Group::take_ready() {
    port_->dispatcher().reap();
    port_->dispatcher().check();
    if (waits_.stray) {
        waits_.stray = false;
        fail(EPROTO, "nicoff: Group: a completion of none of its operations");
    }
}

bool Group::test_barrier() {
    if (!pending_)
        fail(EINVAL, "nicoff: Group: no barrier running");
    take_ready();
    if (!waits_.barrier_done.has_value())
        return false;
    wait_barrier(); // completed: takes the result without sleeping
    return true;
}

void Group::barrier() {
    start_barrier();
    wait_barrier();
}

std::uint64_t Group::broadcasts() const noexcept { return bcast_ ? bcast_->posted : 0; }

BcastRequest Group::post_bcast(std::uint32_t mr, std::uint64_t off, std::uint64_t len,
                               std::uint32_t root, std::span<std::byte> out, int bounce) {
    BcastRequest::State &s = *bcast_;
    const std::uint64_t seq = s.posted;
    nicoff_cmd c;
    nicoff_prep_bcast(&c, id_, root, mr, off, len, Dispatcher::tag(owner_, tag_bcast | seq));
    BcastRequest::State::Entry e;
    e.out = out;
    e.bounce = bounce;
    e.len = len;
    s.q.push_back(e);
    if (bounce >= 0)
        s.pool[static_cast<std::size_t>(bounce)].busy = true;
    try {
        post(c);
    } catch (...) {
        if (bounce >= 0)
            s.pool[static_cast<std::size_t>(bounce)].busy = false;
        s.q.pop_back();
        throw;
    }
    s.posted++;
    return BcastRequest(bcast_, seq);
}

// Whether broadcast seq completed: with block, waits for it (the group's
// timeout); else one look at the ring.
bool Group::bcast_done(std::uint64_t seq, bool block) {
    auto done = [this, seq] {
        const BcastRequest::State::Entry *e = bcast_->find(seq);
        return !e || e->done.has_value();
    };
    if (block) {
        await(done);
        return true;
    }
    take_ready();
    return done();
}

BcastRequest Group::start_broadcast(const MemoryRegion &mr, std::uint64_t off, std::uint64_t len,
                                    std::uint32_t root) {
    if (!port_)
        fail(EINVAL, "nicoff: Group: destroyed");
    if (root >= size_)
        fail(EINVAL, "nicoff: Group: broadcast root outside the group");
    check_range(mr, *port_, off, len, "Group::broadcast");
    return post_bcast(mr.handle(), off, len, root, {}, -1);
}

BcastRequest Group::start_broadcast(std::span<std::byte> buf, std::uint32_t root) {
    if (!port_)
        fail(EINVAL, "nicoff: Group: destroyed");
    if (root >= size_)
        fail(EINVAL, "nicoff: Group: broadcast root outside the group");
    const int b = bcast_->bounce_for(*port_, buf.size());
    BcastRequest::State::Bounce &bb = bcast_->pool[static_cast<std::size_t>(b)];
    if (rank_ == root && !buf.empty())
        std::memcpy(bb.mem.data(), buf.data(), buf.size());
    return post_bcast(bb.mr.handle(), 0, buf.size(), root,
                      rank_ == root ? std::span<std::byte>() : buf, b);
}

void Group::broadcast(const MemoryRegion &mr, std::uint64_t off, std::uint64_t len,
                      std::uint32_t root) {
    start_broadcast(mr, off, len, root).wait();
}

void Group::broadcast(std::span<std::byte> buf, std::uint32_t root) {
    start_broadcast(buf, root).wait();
}

void Group::destroy() {
    if (!port_)
        return;
    nicoff_cmd c;
    nicoff_prep_group_destroy(&c, id_, 0); // run() tags it
    nicoff_cqe q;
    try {
        q = run(c);
    } catch (...) {
        release();
        throw;
    }
    release();
    check_status(q, "GROUP_DESTROY");
}

// ------------------------------------------------------ HostCollective --

namespace detail {

template <class H>
HostCollective<H>::HostCollective(Port &port, std::span<const nicoff_member> members,
                                  std::uint32_t rank, const GroupConfig &cfg)
    : cfg_(cfg), members_(members.begin(), members.end()), rank_(rank) {
    const std::string who = std::string("nicoff: ") + H::name;
    if (members.empty() || members.size() > UINT32_MAX || rank >= members.size())
        fail(EINVAL, who + ": rank outside the member list");
    // As the card checks a group: this port at its rank, nobody twice.
    if (members[rank].card != port.card() || members[rank].port != port.number())
        fail(EINVAL, who + ": the member at this rank is another port");
    for (std::size_t i = 0; i < members.size(); i++)
        for (std::size_t j = i + 1; j < members.size(); j++)
            if (members[i].card == members[j].card && members[i].port == members[j].port)
                fail(EINVAL, who + ": a member is listed twice");
}

template <class H>
HostCollective<H>::HostCollective(HostCollective &&o) noexcept
    : port_(std::exchange(o.port_, nullptr)), owner_(o.owner_), cfg_(o.cfg_),
      members_(std::move(o.members_)), rank_(o.rank_), epoch_(o.epoch_),
      sends_out_(std::exchange(o.sends_out_, 0)), error_(o.error_), stray_(o.stray_) {
    if (port_)
        port_->dispatcher().set(
            owner_, [this](const nicoff_cqe &c) { static_cast<H *>(this)->on_completion(c); });
}

template <class H>
H &HostCollective<H>::replace(H &&o) noexcept {
    H &self = static_cast<H &>(*this);
    if (&self != &o) {
        self.~H();
        new (&self) H(std::move(o));
    }
    return self;
}

template <class H>
void HostCollective<H>::attach(Port &port) {
    owner_ = port.dispatcher().add(
        [this](const nicoff_cqe &c) { static_cast<H *>(this)->on_completion(c); });
    port_ = &port;
}

template <class H>
void HostCollective<H>::detach() noexcept {
    if (!port_)
        return;
    try {
        await([this] { return sends_out_ == 0; });
    } catch (...) {
    }
    port_->dispatcher().remove(owner_);
}

template <class H>
void HostCollective<H>::post(const nicoff_cmd &c) {
    if (!port_->try_post(c))
        await([&] { return port_->try_post(c); });
}

template <class H>
void HostCollective<H>::record(const nicoff_cqe &c, const char *what) noexcept {
    if (c.status < 0 && !error_.err)
        error_ = {-c.status, what};
}

template <class H>
void HostCollective<H>::await(const std::function<bool()> &done) {
    const bool ok = nicoff::await(*port_, cfg_, detail::Deadline::after_silence(cfg_.timeout), true,
                                  [&] { return stray_ || error_.err || done(); });
    if (stray_) {
        stray_ = false;
        fail(EPROTO,
             std::string("nicoff: ") + H::name + ": a completion of none of its operations");
    }
    if (error_.err) {
        const Error e = std::exchange(error_, {});
        fail(e.err, std::string("nicoff: ") + e.what + " failed");
    }
    if (!ok)
        fail(ETIME, "nicoff: no completion within the group's timeout");
}

} // namespace detail

// --------------------------------------------------------- HostBarrier --

HostBarrier::HostBarrier(Port &port, std::span<const nicoff_member> members, std::uint32_t rank,
                         std::uint32_t algorithm, std::uint32_t param, const GroupConfig &cfg)
    : HostCollective(port, members, rank, cfg), alg_(algorithm), buf_(64) {
    const std::vector<BarrierStep> steps =
        barrier_schedule(algorithm, param, rank, static_cast<std::uint32_t>(members.size()));
    nsteps_ = static_cast<std::uint32_t>(steps.size());
    need_.resize(nsteps_);
    got_.assign(nsteps_, 0);
    for (std::uint32_t s = 0; s < nsteps_; s++) {
        for (const std::uint32_t r : steps[s].send)
            sends_.push_back({r, s});
        for (const std::uint32_t r : steps[s].recv)
            recvs_.push_back({r, s});
        need_[s] = static_cast<std::uint32_t>(steps[s].recv.size());
    }
    mr_ = MemoryRegion(port, buf_, NICOFF_ACCESS_LOCAL_WRITE);
    attach(port);
}

HostBarrier::HostBarrier(Port &port, const Job &job, std::uint32_t algorithm, std::uint32_t param,
                         const GroupConfig &cfg)
    : HostBarrier(port, job_members(job), job.rank(), algorithm, param, cfg) {}

// The base moves only its own part of o.
HostBarrier::HostBarrier(HostBarrier &&o) noexcept
    : HostCollective(std::move(o)), alg_(o.alg_), sends_(std::move(o.sends_)),
      recvs_(std::move(o.recvs_)), need_(std::move(o.need_)), nsteps_(o.nsteps_),
      buf_(std::move(o.buf_)), mr_(std::move(o.mr_)), got_(std::move(o.got_)) {}

HostBarrier &HostBarrier::operator=(HostBarrier &&o) noexcept { return replace(std::move(o)); }

HostBarrier::~HostBarrier() { detach(); }

void HostBarrier::on_completion(const nicoff_cqe &c) noexcept {
    const std::uint64_t local = Dispatcher::local(c.tag);
    if (c.opcode == NICOFF_OP_SEND && (local & tag_send) && sends_out_) {
        record(c, "SEND");
        sends_out_--;
    } else if (c.opcode == NICOFF_OP_RECV && (local & tag_recv) &&
               static_cast<std::uint32_t>(local) < nsteps_) {
        record(c, "RECV");
        got_[static_cast<std::uint32_t>(local)]++;
    } else {
        stray_ = true;
    }
}

void HostBarrier::barrier() {
    const std::uint64_t e = ++epoch_;
    std::fill(got_.begin(), got_.end(), 0);
    // Receive tokens for the whole barrier first (messages that came early
    // wait on the card as unexpected ones).
    for (const Msg &m : recvs_) {
        const nicoff_member &src = members_[m.rank];
        post(make_recv(mr_.handle(), 0, 0, src.card, src.port, run_tag(e), ~0ull,
                       Dispatcher::tag(owner_, tag_recv | m.step)));
    }
    std::size_t next_send = 0;
    for (std::uint32_t s = 0; s < nsteps_; s++) {
        for (; next_send < sends_.size() && sends_[next_send].step == s; next_send++) {
            const nicoff_member &dst = members_[sends_[next_send].rank];
            post(make_send(dst.card, dst.port, mr_.handle(), 0, 0, run_tag(e),
                           Dispatcher::tag(owner_, tag_send | s)));
            sends_out_++;
        }
        if (got_[s] < need_[s])
            await([this, s] { return got_[s] >= need_[s]; });
    }
}

// ------------------------------------------------------- HostBroadcast --

HostBroadcast::HostBroadcast(Port &port, std::span<const nicoff_member> members, std::uint32_t rank,
                             const GroupConfig &cfg)
    : HostCollective(port, members, rank, cfg), bounce_(bounce_min) {
    bounce_mr_ = MemoryRegion(port, bounce_, NICOFF_ACCESS_LOCAL_WRITE);
    attach(port);
}

HostBroadcast::HostBroadcast(Port &port, const Job &job, const GroupConfig &cfg)
    : HostBroadcast(port, job_members(job), job.rank(), cfg) {}

// The base moves only its own part of o.
HostBroadcast::HostBroadcast(HostBroadcast &&o) noexcept
    : HostCollective(std::move(o)), received_(o.received_), got_(o.got_),
      bounce_(std::move(o.bounce_)), bounce_mr_(std::move(o.bounce_mr_)) {}

HostBroadcast &HostBroadcast::operator=(HostBroadcast &&o) noexcept {
    return replace(std::move(o));
}

HostBroadcast::~HostBroadcast() { detach(); }

void HostBroadcast::on_completion(const nicoff_cqe &c) noexcept {
    const std::uint64_t local = Dispatcher::local(c.tag);
    if (c.opcode == NICOFF_OP_SEND && local == tag_send && sends_out_) {
        record(c, "SEND");
        sends_out_--;
    } else if (c.opcode == NICOFF_OP_RECV && local == tag_recv && !received_) {
        record(c, "RECV");
        received_ = true;
        got_ = c.result;
    } else {
        stray_ = true;
    }
}

void HostBroadcast::broadcast(const MemoryRegion &mr, std::uint64_t off, std::uint64_t len,
                              std::uint32_t root) {
    if (!port_)
        fail(EINVAL, "nicoff: HostBroadcast: moved from");
    if (root >= members_.size())
        fail(EINVAL, "nicoff: HostBroadcast: root outside the group");
    check_range(mr, *port_, off, len, "HostBroadcast::broadcast");
    const BcastTree t = bcast_tree(root, rank_, size());
    const std::uint64_t msg = host_bcast_tag(++epoch_);
    if (t.parent) {
        received_ = false;
        const nicoff_member &src = members_[*t.parent];
        post(make_recv(mr.handle(), off, len, src.card, src.port, msg, ~0ull,
                       Dispatcher::tag(owner_, tag_recv)));
        await([this] { return received_; });
        if (got_ != len)
            fail(EMSGSIZE, "nicoff: HostBroadcast: the root's length differs");
    }
    for (const std::uint32_t child : t.children) {
        const nicoff_member &dst = members_[child];
        post(make_send(dst.card, dst.port, mr.handle(), off, len, msg,
                       Dispatcher::tag(owner_, tag_send)));
        sends_out_++;
    }
    await([this] { return sends_out_ == 0; });
}

void HostBroadcast::broadcast(std::span<std::byte> buf, std::uint32_t root) {
    if (!port_)
        fail(EINVAL, "nicoff: HostBroadcast: moved from");
    if (buf.size() > bounce_.size()) {
        // A fresh region first: the old one stays valid if this throws.
        std::vector<std::byte> mem(std::bit_ceil(buf.size()));
        MemoryRegion mr(*port_, mem, NICOFF_ACCESS_LOCAL_WRITE);
        bounce_mr_ = std::move(mr);
        bounce_ = std::move(mem);
    }
    if (rank_ == root && !buf.empty())
        std::memcpy(bounce_.data(), buf.data(), buf.size());
    broadcast(bounce_mr_, 0, buf.size(), root);
    if (rank_ != root && !buf.empty())
        std::memcpy(buf.data(), bounce_.data(), buf.size());
}

} // namespace nicoff
