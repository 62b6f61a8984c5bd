// libarmci-nicoff: setting up and tearing down, requests and progress,
// address translation.
#include "state.hpp"

#include "handle.hpp"
#include "shape.hpp"

#include <nicoff/job.hpp>

#include <poll.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <system_error>

namespace nicoff::armci {

namespace {

std::unique_ptr<State> g_state;

// Each allocation's HBNA target: its receive buffers, pinned for the
// allocation's lifetime at every process (GA allocates many arrays).
constexpr std::uint32_t target_buffers = 8;
constexpr std::uint64_t target_buffer_bytes = 64 << 10;

// How many cards the ranks spread over: NICOFF_NICS, else the device's;
// ENODEV when there is no card.
std::uint32_t card_count() {
    if (const char *v = std::getenv("NICOFF_NICS")) {
        const auto n = parse_job_value(v);
        if (!n || *n == 0)
            fail(EINVAL, std::string("NICOFF_NICS='") + v + "'");
        return *n;
    }
    const auto info = Job::query_device();
    if (!info)
        fail(ENODEV, "no /dev/nicoff0: the nicoff module is not loaded");
    return info->num_cards;
}

// Whether every rank runs on this host (every card lives in one kernel):
// the ranks sharing memory with this one are all of them.
bool one_host(MPI_Comm comm) {
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int same = MPI_UNEQUAL;
    MPI_Comm_compare(comm, node, &same);
    MPI_Comm_free(&node);
    return same == MPI_CONGRUENT;
}

// Every rank's local step succeeded?  Collective; a rank that failed says
// why on its own stderr, the others learn only that one failed.
void agree(MPI_Comm comm, bool ok, const char *step) {
    int all = ok;
    MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, comm);
    if (!all && ok)
        fail(ECONNABORTED, std::string("another rank failed ") + step);
}

// Runs a local step; a failure is agreed on by every rank before the
// error goes up, so that no rank waits in a collective the others left.
template <class F>
void step(MPI_Comm comm, const char *what, F f) {
    std::exception_ptr err;
    try {
        f();
    } catch (const std::system_error &) {
        err = std::current_exception();
    }
    agree(comm, !err, what);
    if (err)
        std::rethrow_exception(err);
}

// Waits until every rank of comm has arrived, sleeping between looks:
// MPICH spins in its blocking calls, which takes the CPU from a rank still
// at work (auto's calibration times the card on this machine's CPUs).
void quiet_barrier(MPI_Comm comm) {
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Ibarrier(comm, &req);
    for (int done = 0; !done;) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (!done)
            ::poll(nullptr, 0, 1);
    }
}

// auto's model, one for the job: rank 0 reads its card's cache file or
// measures, alone (ranks measuring at once on shared CPUs would time each
// other); the others wait quietly and take it, so that every rank chooses
// the same method for the same shape.
void share_model(MPI_Comm comm, std::uint32_t me, StridedEngine &engine) {
    std::array<char, 512> text{};
    std::exception_ptr err;
    if (me == 0) {
        try {
            const std::string t = engine.model().to_text();
            if (t.size() >= text.size())
                fail(EOVERFLOW, "auto's model: its text is too long to share");
            std::copy(t.begin(), t.end(), text.begin());
        } catch (const std::system_error &) {
            err = std::current_exception();
        }
    }
    quiet_barrier(comm);
    agree(comm, !err, "measuring auto's model");
    if (err)
        std::rethrow_exception(err);
    MPI_Bcast(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, comm);
    step(comm, "taking auto's model", [&] {
        const auto m = StridedModel::from_text(text.data());
        if (!m)
            fail(EPROTO, "auto's model from rank 0 does not parse");
        engine.use_model(*m);
    });
}

std::uint32_t agree_group_id(MPI_Comm comm, std::uint32_t me) {
    std::uint32_t id = 0;
    if (me == 0)
        while (id == 0)
            if (getrandom(&id, sizeof(id), 0) != sizeof(id))
                id = static_cast<std::uint32_t>(std::rand()) | 1u;
    MPI_Bcast(&id, 1, MPI_UINT32_T, 0, comm);
    return id;
}

// Copies between the caller's strided side at user and the packed bytes
// (to_user: unpack), through process_vm_readv/writev on this process: a
// local buffer that is not mapped, or not writable for a get, fails (false)
// as registering it would, instead of faulting in the library.
bool copy_side(std::byte *user, std::span<const std::uint64_t> count,
               std::span<const std::uint64_t> stride, std::byte *packed, bool to_user) {
    constexpr std::size_t batch = 1024; // IOV_MAX
    std::vector<iovec> mine, theirs;
    std::uint64_t want = 0;
    bool ok = true;
    const auto flush = [&] {
        if (mine.empty() || !ok)
            return;
        const pid_t self = ::getpid();
        const ssize_t n = to_user ? ::process_vm_writev(self, mine.data(), mine.size(),
                                                        theirs.data(), theirs.size(), 0)
                                  : ::process_vm_readv(self, mine.data(), mine.size(),
                                                       theirs.data(), theirs.size(), 0);
        if (n < 0 && (errno == ENOSYS || errno == EPERM)) {
            // A sandbox without the calls (a seccomp filter): plain copies,
            // which fault on such a buffer as memcpy does.
            for (std::size_t i = 0; i < mine.size(); i++)
                if (to_user)
                    std::memcpy(theirs[i].iov_base, mine[i].iov_base, mine[i].iov_len);
                else
                    std::memcpy(mine[i].iov_base, theirs[i].iov_base, mine[i].iov_len);
        } else {
            ok = n >= 0 && static_cast<std::uint64_t>(n) == want;
        }
        mine.clear();
        theirs.clear();
        want = 0;
    };
    const std::vector<std::uint64_t> dense = packed_strides(count);
    for_each_chunk(count, {0, stride}, {0, dense},
                   [&](std::uint64_t at, std::uint64_t pat, std::uint64_t n) {
                       mine.push_back({packed + pat, n});
                       theirs.push_back({user + at, n});
                       want += n;
                       if (mine.size() == batch)
                           flush();
                   });
    flush();
    return ok;
}

} // namespace

[[noreturn]] void fail(int err, const std::string &what) {
    throw std::system_error(err, std::generic_category(), what);
}

State &state() {
    if (!g_state)
        fail(EINVAL, "ARMCI is not initialised (ARMCI_Init)");
    return *g_state;
}

bool initialised() noexcept { return g_state != nullptr; }

std::uint32_t proc_of(int proc) {
    State &s = state();
    if (proc < 0 || static_cast<std::uint32_t>(proc) >= s.nproc)
        fail(EINVAL,
             "proc " + std::to_string(proc) + " is not in [0, " + std::to_string(s.nproc) + ")");
    return static_cast<std::uint32_t>(proc);
}

int guarded(const char *call, const std::function<void()> &f) noexcept {
    try {
        f();
        return 0;
    } catch (const std::system_error &e) {
        int rank = -1;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        std::fprintf(stderr, "armci-nicoff: rank %d: %s: %s\n", rank, call, e.what());
        return e.code().value() ? e.code().value() : EIO;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "armci-nicoff: %s: %s\n", call, e.what());
        return EIO;
    }
}

void must(const char *call, const std::function<void()> &f) noexcept {
    if (const int err = guarded(call, f))
        MPI_Abort(MPI_COMM_WORLD, err);
}

State::State() : remote(0), local(1) {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    try {
        setup();
    } catch (...) {
        MPI_Comm_free(&comm); // the destructor does not run for a failed constructor
        throw;
    }
}

void State::setup() {
    int r = 0, n = 0;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    me = static_cast<std::uint32_t>(r);
    nproc = static_cast<std::uint32_t>(n);
    remote = Directory(nproc);
    std::uint64_t bounce_size = 0;
    step(comm, "reading the environment", [&] {
        method = strided_method(std::getenv("NICOFF_ARMCI_STRIDED"));
        bounce_size = bounce_bytes(std::getenv("NICOFF_ARMCI_BOUNCE"));
    });
    step(comm, "checking the hosts", [&] {
        if (!one_host(comm))
            fail(EOPNOTSUPP, "the ranks run on several hosts, and every card lives in one kernel");
    });
    step(comm, "opening the ports", [&] {
        const std::uint32_t card = me % card_count();
        rma.emplace(card, PortConfig{});
        sync.emplace(card, PortConfig{});
        strided.emplace(*rma);
        mem.emplace(*sync);
        if (method != StridedMethod::nic) {
            engine_port.emplace(card, PortConfig{});
            engine.emplace(*engine_port);
        }
        // The floating-point accumulate lock of this process's memory.
        sys_words.assign(8, 0);
        sys_mr =
            rma->register_memory(std::as_writable_bytes(std::span(sys_words)), NICOFF_ACCESS_ALL);
        if (bounce_size) {
            bounce.emplace(bounce_size);
            bounce->mr = rma->register_memory(bounce->bytes, NICOFF_ACCESS_LOCAL_WRITE);
            if (engine_port)
                bounce->engine_mr =
                    engine_port->register_memory(bounce->bytes, NICOFF_ACCESS_LOCAL_WRITE);
        }
    });
    // auto's model now, not in the middle of the first strided call.
    if (method == StridedMethod::automatic)
        share_model(comm, me, *engine);
    // card, rma port, sync port, lock rkey
    std::array<std::uint32_t, 4> mine = {rma->card(), rma->number(), sync->number(), sys_mr.rkey()};
    std::vector<std::array<std::uint32_t, 4>> all(nproc);
    MPI_Allgather(mine.data(), 4, MPI_UINT32_T, all.data(), 4, MPI_UINT32_T, comm);
    std::vector<nicoff_member> members;
    for (const auto &a : all) {
        members.push_back({a[0], a[2]});
        acc_lock.push_back({a[0], a[1], a[3], 8, 0});
    }
    const std::uint32_t id = agree_group_id(comm, me);
    step(comm, "creating the card group", [&] { group.emplace(*sync, members, me, id); });
}

State::~State() {
    if (comm != MPI_COMM_NULL)
        MPI_Comm_free(&comm);
}

Request &State::start(std::uint32_t target) {
    // A handle keeps the id's low 31 bits, 0 meaning no request.
    if (handle_id(next_id_) == 0)
        next_id_++;
    const std::uint64_t id = next_id_++;
    Request &r = pending_[id];
    r.id = id;
    r.target = target;
    r.outstanding = 1; // held until seal(): it must not complete while posting
    return r;
}

void State::post(Request &r, const std::function<bool()> &try_post) {
    while (!try_post()) {
        if (rma->in_error())
            fail(EIO, "the port is in the error state");
        progress();
    }
    r.outstanding++;
}

void State::post_engine(Request &r, const std::function<void()> &start) {
    // The engine bounds what it has in flight itself: a start never waits.
    start();
    r.outstanding++;
}

std::uint64_t State::seal(Request &r) {
    const std::uint64_t id = r.id;
    if (--r.outstanding == 0)
        complete(r);
    return id;
}

std::uint64_t State::run(std::uint32_t target, const std::function<void(Request &)> &post_all) {
    Request &r = start(target);
    try {
        post_all(r);
    } catch (...) {
        // What was posted still completes; nothing of it may be lost.
        if (r.err == 0)
            r.err = -ECANCELED;
        wait_id(seal(r));
        throw;
    }
    return seal(r);
}

void State::complete(Request &r) {
    if (r.err == 0 && r.finish)
        r.finish();
    if (r.err)
        failed_[r.id] = {r.target, r.err};
    pending_.erase(r.id); // deregisters its temporary regions
}

void State::completed(std::uint64_t tag, std::int32_t status) {
    auto it = pending_.find(tag);
    if (it == pending_.end()) {
        std::fprintf(stderr, "armci-nicoff: rank %u: a completion of no request (tag %llu)\n", me,
                     static_cast<unsigned long long>(tag));
        return;
    }
    Request &r = it->second;
    if (status < 0 && r.err == 0) {
        r.err = status;
        std::fprintf(stderr, "armci-nicoff: rank %u: an operation on proc %u failed: %s\n", me,
                     r.target, std::generic_category().message(-status).c_str());
    }
    if (--r.outstanding == 0)
        complete(r);
}

bool State::progress() {
    std::array<nicoff_cqe, 32> cqes;
    const std::size_t n = rma->poll(cqes);
    for (std::size_t i = 0; i < n; i++)
        completed(cqes[i].tag, cqes[i].status);
    std::size_t m = 0;
    if (engine) {
        std::array<StridedDone, 16> done;
        m = engine->poll(done);
        for (std::size_t i = 0; i < m; i++)
            completed(done[i].tag, done[i].status);
    }
    return n + m > 0;
}

void State::sleep() {
    if (rma->in_error() || (engine_port && engine_port->in_error()))
        fail(EIO, "the port is in the error state");
    std::array<pollfd, 2> fds = {{{rma->fd(), POLLIN, 0}, {-1, POLLIN, 0}}};
    if (engine_port)
        fds[1].fd = engine_port->fd();
    if (::poll(fds.data(), fds.size(), 10) < 0 && errno != EINTR)
        fail(errno, "poll");
}

bool State::busy(const std::function<bool(const Request &)> &pick) const {
    for (const auto &[id, r] : pending_)
        if (pick(r))
            return true;
    return false;
}

int State::wait(const std::function<bool(const Request &)> &pick) {
    // Spins first: a put's round trip is tens of microseconds, and the
    // sleep in poll(2) adds a wake-up to it.
    unsigned idle = 0;
    while (busy(pick)) {
        if (progress())
            idle = 0;
        else if (++idle > 2000)
            sleep();
    }
    int err = 0;
    for (auto it = failed_.begin(); it != failed_.end();) {
        Request probe;
        probe.id = it->first;
        probe.target = it->second.first;
        if (pick(probe)) {
            if (!err)
                err = it->second.second;
            it = failed_.erase(it);
        } else {
            ++it;
        }
    }
    return err;
}

int State::wait_id(std::uint64_t id) {
    return wait([id](const Request &r) { return r.id == id; });
}

Place State::remote_place(int proc, const void *addr, std::uint64_t len) const {
    return remote.find(proc_of(proc), reinterpret_cast<std::uintptr_t>(addr), len);
}

RemoteWord State::word(int proc, const void *addr, std::uint32_t width) const {
    const Place p = remote_place(proc, addr, width);
    if (p.offset % width)
        fail(EINVAL, "the word is not aligned to its " + std::to_string(width) + " bytes");
    return {p.slice->region.card, p.slice->region.port, p.slice->region.rkey, width, p.offset};
}

LocalBuf State::local_buf(const void *addr, std::uint64_t len, bool written, bool on_engine) {
    LocalBuf b;
    const Place p = local.lookup(0, reinterpret_cast<std::uintptr_t>(addr), len);
    if (p.slice) {
        b.mr = on_engine ? p.slice->engine_mr : p.slice->mr;
        b.offset = p.offset;
        return b;
    }
    if (!addr)
        fail(EINVAL, "a NULL local buffer");
    auto *bytes = static_cast<std::byte *>(const_cast<void *>(addr));
    const std::span<std::byte> range(bytes, len ? len : 1);
    // A source needs no right: read-only memory (a constant) may be put.
    const std::uint32_t access = written ? NICOFF_ACCESS_LOCAL_WRITE : 0;
    Port &port = on_engine ? *engine_port : *rma;
    try {
        b.temp = port.register_memory(range, access);
    } catch (const std::system_error &e) {
        // Too many regions on the port (max_mrs): the requests in flight
        // hold theirs until they complete.  All but the newest, which is
        // the caller's own, still being posted; their errors stay for
        // their own waits.
        const std::uint64_t newest = next_id_ - 1;
        const auto older = [newest](const Request &r) {
            return r.id < newest;
        };
        if (e.code().value() != ENOSPC || !busy(older))
            throw;
        while (busy(older))
            if (!progress())
                sleep();
        b.temp = port.register_memory(range, access);
    }
    b.mr = &*b.temp;
    return b;
}

LocalSide State::local_side(Request &r, void *addr, std::span<const std::uint64_t> count,
                            std::span<const std::uint64_t> stride, bool written, bool on_engine) {
    const std::uint64_t ext = extent(count, stride);
    const std::vector<std::uint64_t> own(stride.begin(), stride.end());
    const Place p = local.lookup(0, reinterpret_cast<std::uintptr_t>(addr), ext);
    if (p.slice)
        return {on_engine ? p.slice->engine_mr : p.slice->mr, p.offset, own};
    std::uint64_t bytes = 1;
    bool fits = bounce && !r.lease && addr;
    for (const std::uint64_t c : count)
        fits = fits && !__builtin_mul_overflow(bytes, c, &bytes);
    if (const auto off = fits ? bounce->space.take(bytes) : std::nullopt) {
        r.lease = BounceLease(bounce->space, *off, bytes);
        std::byte *packed = bounce->bytes.data() + *off;
        auto *user = static_cast<std::byte *>(addr);
        if (written)
            r.finish = [then = std::move(r.finish), packed, user, &r,
                        cnt = std::vector<std::uint64_t>(count.begin(), count.end()), own] {
                if (!copy_side(user, cnt, own, packed, true))
                    r.err = -EFAULT; // the get fails: its destination is not writable
                else if (then)
                    then();
            };
        else if (!copy_side(user, count, stride, packed, false))
            fail(EFAULT, "the local buffer is not readable");
        return {on_engine ? &bounce->engine_mr : &bounce->mr, *off, packed_strides(count)};
    }
    LocalBuf lb = local_buf(addr, ext, written, on_engine);
    if (!lb.temp)
        return {lb.mr, lb.offset, own};
    r.temps.push_back(std::move(*lb.temp));
    return {&r.temps.back(), lb.offset, own};
}

void State::expose(Allocation &a) {
    const std::span<std::byte> bytes(static_cast<std::byte *>(a.base), a.size);
    a.mr = rma->register_memory(bytes, NICOFF_ACCESS_ALL);
    if (!engine)
        return;
    a.engine_mr = engine_port->register_memory(bytes, NICOFF_ACCESS_LOCAL_WRITE);
    if (needs_targets(method))
        a.target = std::make_unique<StridedTarget>(
            rma->card(), bytes,
            StridedTarget::Options{.buffers = target_buffers, .buffer_bytes = target_buffer_bytes});
}

// Exposed to init.cpp.
void make_state() { g_state = std::make_unique<State>(); }
void drop_state() { g_state.reset(); }

} // namespace nicoff::armci
