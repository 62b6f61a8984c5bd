// nicoff::Group (barriers run by the card) and nicoff::HostBarrier (the
// same algorithms run by the process over SEND/RECV).
#include "barrier_sched.h"
#include "dispatch.hpp"

#include <nicoff/group.hpp>

#include <array>
#include <atomic>
#include <charconv>
#include <new>
#include <utility>

namespace nicoff {

namespace {

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
    owner_ = port_->dispatcher().add([this](const nicoff_cqe &c) { on_completion(c); });
    std::vector<nicoff_member> table(members.begin(), members.end());
    nicoff_cqe q;
    try {
        MemoryRegion mr(*port_, std::as_writable_bytes(std::span<nicoff_member>(table)), 0);
        // run() gives it its tag.
        nicoff_cmd c;
        nicoff_prep_group_create(&c, id_, rank_, size_, mr.handle(), 0, cfg_.algorithm, cfg_.param,
                                 0);
        q = run(c);
        check_status(q, "GROUP_CREATE");
    } catch (...) {
        release();
        throw;
    }
    alg_ = static_cast<std::uint32_t>(q.result);
    param_ = static_cast<std::uint32_t>(q.result >> 32);
}

// The port's dispatcher no longer knows the group.
void Group::release() noexcept {
    if (port_)
        port_->dispatcher().remove(owner_);
    port_ = nullptr;
    pending_ = false;
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
    else
        waits_.stray = true;
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

nicoff_cqe Group::run(const nicoff_cmd &cmd) {
    nicoff_cmd c = cmd;
    c.tag = Dispatcher::tag(owner_, next_tag_++);
    waits_.want = c.tag;
    waits_.reply.reset();
    post(c);
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

void Group::barrier() {
    start_barrier();
    wait_barrier();
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

// --------------------------------------------------------- HostBarrier --

HostBarrier::HostBarrier(Port &port, std::span<const nicoff_member> members, std::uint32_t rank,
                         std::uint32_t algorithm, std::uint32_t param, const GroupConfig &cfg)
    : cfg_(cfg), members_(members.begin(), members.end()), rank_(rank), alg_(algorithm), buf_(64) {
    if (members.empty() || rank >= members.size())
        fail(EINVAL, "nicoff: HostBarrier: rank outside the member list");
    // As the card checks a group: this port at its rank, nobody twice.
    if (members[rank].card != port.card() || members[rank].port != port.number())
        fail(EINVAL, "nicoff: HostBarrier: the member at this rank is another port");
    for (std::size_t i = 0; i < members.size(); i++)
        for (std::size_t j = i + 1; j < members.size(); j++)
            if (members[i].card == members[j].card && members[i].port == members[j].port)
                fail(EINVAL, "nicoff: HostBarrier: a member is listed twice");
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
    port_ = &port;
    owner_ = port.dispatcher().add([this](const nicoff_cqe &c) { on_completion(c); });
}

HostBarrier::HostBarrier(Port &port, const Job &job, std::uint32_t algorithm, std::uint32_t param,
                         const GroupConfig &cfg)
    : HostBarrier(port, job_members(job), job.rank(), algorithm, param, cfg) {}

HostBarrier::HostBarrier(HostBarrier &&o) noexcept
    : port_(std::exchange(o.port_, nullptr)), owner_(o.owner_), cfg_(o.cfg_),
      members_(std::move(o.members_)), rank_(o.rank_), alg_(o.alg_), sends_(std::move(o.sends_)),
      recvs_(std::move(o.recvs_)), need_(std::move(o.need_)), nsteps_(o.nsteps_),
      buf_(std::move(o.buf_)), mr_(std::move(o.mr_)), epoch_(o.epoch_), got_(std::move(o.got_)),
      sends_out_(std::exchange(o.sends_out_, 0)), error_(o.error_), stray_(o.stray_) {
    if (port_)
        port_->dispatcher().set(owner_, [this](const nicoff_cqe &c) { on_completion(c); });
}

HostBarrier &HostBarrier::operator=(HostBarrier &&o) noexcept {
    if (this != &o) {
        this->~HostBarrier();
        new (this) HostBarrier(std::move(o));
    }
    return *this;
}

// Waits for its SENDs still in flight, so that their completions do not
// turn up as strangers to whoever polls the port next.
HostBarrier::~HostBarrier() {
    if (!port_)
        return;
    try {
        await([this] { return sends_out_ == 0; });
    } catch (...) {
    }
    port_->dispatcher().remove(owner_);
}

void HostBarrier::on_completion(const nicoff_cqe &c) noexcept {
    const std::uint64_t local = Dispatcher::local(c.tag);
    if (c.opcode == NICOFF_OP_SEND && (local & tag_send) && sends_out_) {
        if (c.status < 0 && !error_.err)
            error_ = {-c.status, "SEND"};
        sends_out_--;
    } else if (c.opcode == NICOFF_OP_RECV && (local & tag_recv) &&
               static_cast<std::uint32_t>(local) < nsteps_) {
        if (c.status < 0 && !error_.err)
            error_ = {-c.status, "RECV"};
        got_[static_cast<std::uint32_t>(local)]++;
    } else {
        stray_ = true;
    }
}

// Dispatches until done(); ETIME when no completion came for cfg.timeout,
// and the first error a completion brought.
void HostBarrier::await(const std::function<bool()> &done) {
    const bool ok = nicoff::await(*port_, cfg_, detail::Deadline::after_silence(cfg_.timeout), true,
                                  [&] { return stray_ || error_.err || done(); });
    if (stray_) {
        stray_ = false;
        fail(EPROTO, "nicoff: HostBarrier: a completion of none of its operations");
    }
    if (error_.err) {
        const Error e = std::exchange(error_, {});
        fail(e.err, std::string("nicoff: ") + e.what + " failed");
    }
    if (!ok)
        fail(ETIME, "nicoff: no completion within the group's timeout");
}

void HostBarrier::barrier() {
    const std::uint64_t e = ++epoch_;
    auto post = [this](const nicoff_cmd &c) {
        if (!port_->try_post(c))
            await([&] { return port_->try_post(c); });
    };
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

} // namespace nicoff
