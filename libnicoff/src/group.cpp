// nicoff::Group (barriers run by the card) and nicoff::HostBarrier (the
// same algorithms run by the process over SEND/RECV).
#include "common.hpp"

#include <nicoff/group.hpp>

#include <array>
#include <atomic>
#include <charconv>
#include <new>
#include <thread>
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
constexpr std::uint32_t default_tree_degree = 4;     // firmware-sim/barrier.h
constexpr std::uint32_t default_combining_fanin = 4; // the same

std::atomic<std::uint32_t> job_groups{0};

using clock = std::chrono::steady_clock;

[[noreturn]] void fail(int err, const std::string &what) { detail::throw_errno(err, what); }

void check_status(const nicoff_cqe &c, const char *what) {
    if (c.status < 0)
        fail(-c.status, std::string("nicoff: ") + what + " failed");
}

// Polls port for one completion: spins for spin, then sleeps in poll(2);
// ETIME once timeout (if not negative) has passed since start.
nicoff_cqe next_cqe(Port &port, const GroupConfig &cfg, clock::time_point start) {
    nicoff_cqe c{};
    const clock::time_point spin_end = start + cfg.spin;
    for (;;) {
        if (port.poll(std::span<nicoff_cqe>(&c, 1)) == 1)
            return c;
        const clock::time_point now = clock::now();
        if (now < spin_end) {
            std::this_thread::yield();
            continue;
        }
        std::chrono::milliseconds left{-1};
        if (cfg.timeout.count() >= 0) {
            left = std::chrono::duration_cast<std::chrono::milliseconds>(start + cfg.timeout - now);
            if (left.count() <= 0)
                fail(ETIME, "nicoff: no completion within the group's timeout");
        }
        port.wait(left);
    }
}

std::vector<nicoff_member> job_members(const Job &job) {
    std::vector<nicoff_member> m(job.size());
    for (std::uint32_t r = 0; r < job.size(); r++) {
        const Placement p = job.placement_of(r);
        m[r] = nicoff_member{p.card, p.port};
    }
    return m;
}

// --- the schedules, as firmware-sim/barrier_alg.c builds them -------------

struct Builder {
    std::vector<BarrierStep> steps{1};
    bool used = false;
    void send(std::uint64_t r) {
        steps.back().send.push_back(static_cast<std::uint32_t>(r));
        used = true;
    }
    void recv(std::uint64_t r) {
        steps.back().recv.push_back(static_cast<std::uint32_t>(r));
        used = true;
    }
    void next() {
        if (used) {
            steps.emplace_back();
            used = false;
        }
    }
    std::vector<BarrierStep> done() {
        if (!used)
            steps.pop_back();
        return std::move(steps);
    }
};

void sched_dissemination(Builder &b, std::uint64_t r, std::uint64_t n) {
    for (std::uint64_t d = 1; d < n; d <<= 1) {
        b.send((r + d) % n);
        b.recv((r + n - d) % n);
        b.next();
    }
}

void sched_pairwise(Builder &b, std::uint64_t r, std::uint64_t n) {
    std::uint64_t m = 1;
    while (m * 2 <= n)
        m *= 2;
    if (r >= m) {
        b.send(r - m);
        b.next();
        b.recv(r - m);
        b.next();
        return;
    }
    if (r + m < n) {
        b.recv(r + m);
        b.next();
    }
    for (std::uint64_t k = 1; k < m; k <<= 1) {
        b.send(r ^ k);
        b.recv(r ^ k);
        b.next();
    }
    if (r + m < n) {
        b.send(r + m);
        b.next();
    }
}

void sched_tree(Builder &b, std::uint64_t r, std::uint64_t n, std::uint64_t d) {
    const std::uint64_t c0 = r * d + 1;
    for (std::uint64_t c = c0; c < c0 + d && c < n; c++)
        b.recv(c);
    b.next();
    if (r) {
        b.send((r - 1) / d);
        b.recv((r - 1) / d);
        b.next();
    }
    for (std::uint64_t c = c0; c < c0 + d && c < n; c++)
        b.send(c);
    b.next();
}

void sched_central(Builder &b, std::uint64_t r, std::uint64_t n) {
    if (r) {
        b.send(0);
        b.recv(0);
        b.next();
        return;
    }
    for (std::uint64_t i = 1; i < n; i++)
        b.recv(i);
    b.next();
    for (std::uint64_t i = 1; i < n; i++)
        b.send(i);
    b.next();
}

void sched_combining(Builder &b, std::uint64_t r, std::uint64_t n, std::uint64_t k) {
    for (std::uint64_t s = 1; s < n;) {
        const std::uint64_t grp = s * k;
        if (r % grp) {
            b.send(r - r % grp);
            break;
        }
        for (std::uint64_t j = 1; j < k && r + j * s < n; j++)
            b.recv(r + j * s);
        b.next();
        s = grp;
    }
    if (r)
        b.recv(r - (r & (~r + 1)));
    b.next();
    std::uint64_t mask = 0;
    if (r) {
        mask = (r & (~r + 1)) >> 1;
    } else if (n >= 2) {
        mask = 1;
        while (mask * 2 < n)
            mask *= 2;
    }
    for (; mask; mask >>= 1)
        if (r + mask < n)
            b.send(r + mask);
    b.next();
}

std::uint64_t run_tag(std::uint64_t epoch) { return 0xb0ull << 56 | (epoch & 0xffffffffffffull); }

constexpr std::uint64_t tag_send = 1ull << 62;
constexpr std::uint64_t tag_recv = 1ull << 61;

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
    Builder b;
    switch (algorithm) {
    case NICOFF_BARRIER_PAIRWISE:
        sched_pairwise(b, rank, size);
        break;
    case NICOFF_BARRIER_DISSEMINATION:
        sched_dissemination(b, rank, size);
        break;
    case NICOFF_BARRIER_TREE:
        if (param == 1)
            fail(EINVAL, "nicoff: a tree needs a degree of at least 2");
        sched_tree(b, rank, size, param ? param : default_tree_degree);
        break;
    case NICOFF_BARRIER_CENTRAL:
        sched_central(b, rank, size);
        break;
    case NICOFF_BARRIER_COMBINING:
        if (param == 1) // checked first: a fan-in of 1 never combines anything
            fail(EINVAL, "nicoff: a combining tree needs a fan-in of at least 2");
        sched_combining(b, rank, size, param ? param : default_combining_fanin);
        break;
    case NICOFF_BARRIER_TOURNAMENT:
        sched_combining(b, rank, size, 2);
        break;
    default:
        fail(EINVAL, "nicoff: no such barrier algorithm");
    }
    return b.done();
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
    std::vector<nicoff_member> table(members.begin(), members.end());
    MemoryRegion mr(*port_, std::as_writable_bytes(std::span<nicoff_member>(table)), 0);
    nicoff_cmd c{};
    c.opcode = NICOFF_OP_GROUP_CREATE;
    c.group.group_id = id_;
    c.group.rank = rank_;
    c.group.size = size_;
    c.group.mr = mr.handle();
    c.group.algorithm = cfg_.algorithm;
    c.group.param = cfg_.param;
    nicoff_cqe q;
    try {
        q = run(c);
    } catch (...) {
        port_ = nullptr;
        throw;
    }
    if (q.status < 0) {
        port_ = nullptr;
        check_status(q, "GROUP_CREATE");
    }
    alg_ = static_cast<std::uint32_t>(q.result);
    param_ = static_cast<std::uint32_t>(q.result >> 32);
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
        cfg_ = o.cfg_;
        id_ = o.id_;
        rank_ = o.rank_;
        size_ = o.size_;
        alg_ = o.alg_;
        param_ = o.param_;
        done_ = o.done_;
        next_tag_ = o.next_tag_;
        pending_ = std::exchange(o.pending_, false);
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

void Group::post(const nicoff_cmd &cmd) {
    while (!port_->try_post(cmd)) {
        if (port_->in_error())
            fail(EIO, "nicoff: port is in the error state");
        std::this_thread::yield();
    }
}

nicoff_cqe Group::wait_tag(std::uint64_t tag) {
    const clock::time_point start = clock::now();
    for (;;) {
        const nicoff_cqe c = next_cqe(*port_, cfg_, start);
        if (c.tag == tag)
            return c;
        // A barrier cancelled by DESTROY completes too.
        if (!(pending_ && c.tag == next_tag_ - 1 && c.opcode == NICOFF_OP_BARRIER))
            fail(EPROTO, "nicoff: Group: a completion of another operation on its port");
        pending_ = false;
    }
}

nicoff_cqe Group::run(const nicoff_cmd &cmd) {
    nicoff_cmd c = cmd;
    c.tag = next_tag_++;
    post(c);
    return wait_tag(c.tag);
}

void Group::start_barrier() {
    if (!port_)
        fail(EINVAL, "nicoff: Group: destroyed");
    if (pending_)
        fail(EBUSY, "nicoff: Group: a barrier is already running");
    nicoff_cmd c{};
    c.opcode = NICOFF_OP_BARRIER;
    c.group.group_id = id_;
    c.tag = next_tag_++;
    post(c);
    pending_ = true;
}

void Group::wait_barrier() {
    if (!pending_)
        fail(EINVAL, "nicoff: Group: no barrier running");
    const nicoff_cqe q = wait_tag(next_tag_ - 1);
    pending_ = false;
    check_status(q, "BARRIER");
    done_++;
}

void Group::barrier() {
    start_barrier();
    wait_barrier();
}

void Group::destroy() {
    if (!port_)
        return;
    nicoff_cmd c{};
    c.opcode = NICOFF_OP_GROUP_DESTROY;
    c.group.group_id = id_;
    nicoff_cqe q;
    try {
        q = run(c);
    } catch (...) {
        port_ = nullptr;
        throw;
    }
    port_ = nullptr;
    pending_ = false;
    check_status(q, "GROUP_DESTROY");
}

// --------------------------------------------------------- HostBarrier --

HostBarrier::HostBarrier(Port &port, std::span<const nicoff_member> members, std::uint32_t rank,
                         std::uint32_t algorithm, std::uint32_t param, const GroupConfig &cfg)
    : port_(&port), cfg_(cfg), members_(members.begin(), members.end()), rank_(rank),
      alg_(algorithm), buf_(64) {
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
    cqes_.resize(32);
}

HostBarrier::HostBarrier(Port &port, const Job &job, std::uint32_t algorithm, std::uint32_t param,
                         const GroupConfig &cfg)
    : HostBarrier(port, job_members(job), job.rank(), algorithm, param, cfg) {}

HostBarrier::HostBarrier(HostBarrier &&o) noexcept
    : port_(std::exchange(o.port_, nullptr)), cfg_(o.cfg_), members_(std::move(o.members_)),
      rank_(o.rank_), alg_(o.alg_), sends_(std::move(o.sends_)), recvs_(std::move(o.recvs_)),
      need_(std::move(o.need_)), nsteps_(o.nsteps_), buf_(std::move(o.buf_)), mr_(std::move(o.mr_)),
      epoch_(o.epoch_), got_(std::move(o.got_)), sends_out_(std::exchange(o.sends_out_, 0)),
      cqes_(std::move(o.cqes_)) {}

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
        while (sends_out_)
            wait_some();
    } catch (...) {
    }
}

// Takes the completions there are (waiting for at least one).
void HostBarrier::wait_some() {
    const clock::time_point start = clock::now();
    const nicoff_cqe first = next_cqe(*port_, cfg_, start);
    std::size_t n = 1;
    cqes_[0] = first;
    n += port_->poll(std::span<nicoff_cqe>(cqes_).subspan(1));
    for (std::size_t i = 0; i < n; i++) {
        const nicoff_cqe &c = cqes_[i];
        if (c.opcode == NICOFF_OP_SEND && (c.tag & tag_send)) {
            check_status(c, "SEND");
            sends_out_--;
        } else if (c.opcode == NICOFF_OP_RECV && (c.tag & tag_recv)) {
            check_status(c, "RECV");
            got_[static_cast<std::uint32_t>(c.tag)]++;
        } else {
            fail(EPROTO, "nicoff: HostBarrier: a completion of another operation on its port");
        }
    }
}

void HostBarrier::barrier() {
    const std::uint64_t e = ++epoch_;
    auto post = [this](const nicoff_cmd &c) {
        while (!port_->try_post(c)) {
            if (port_->in_error())
                fail(EIO, "nicoff: port is in the error state");
            wait_some();
        }
    };
    std::fill(got_.begin(), got_.end(), 0);
    // Receive tokens for the whole barrier first (messages that came early
    // wait on the card as unexpected ones).
    for (const Msg &m : recvs_) {
        const nicoff_member &src = members_[m.rank];
        post(make_recv(mr_.handle(), 0, 0, src.card, src.port, run_tag(e), ~0ull,
                       tag_recv | m.step));
    }
    std::size_t next_send = 0;
    for (std::uint32_t s = 0; s < nsteps_; s++) {
        for (; next_send < sends_.size() && sends_[next_send].step == s; next_send++) {
            const nicoff_member &dst = members_[sends_[next_send].rank];
            post(make_send(dst.card, dst.port, mr_.handle(), 0, 0, run_tag(e), tag_send | s));
            sends_out_++;
        }
        while (got_[s] < need_[s])
            wait_some();
    }
}

} // namespace nicoff
