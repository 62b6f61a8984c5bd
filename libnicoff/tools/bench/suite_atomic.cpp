// Suite "atomic": remote atomics executed by the target card against the
// host-based baselines of seed 001 section V (an AtomicServer process at the
// target that polls, spins then blocks, or blocks), and the locks built on
// them.  The lock's home, and the atomics' target, is card --home (1); the
// requesters are on the other cards.
//
//   fadd32 fadd64 swap32 swap64 cas_hit cas_miss
//       latency_us (mean), latency_us_median: one operation at a time from
//       one requester; methods card, host-poll, host-spin, host-block
//   fadd64 / ops_per_s
//       throughput of one target card: nodes requesters, each with --depth
//       fetch-adds outstanding (card), or one at a time (host-*: the
//       server's requests are synchronous round trips)
//   lock
//       latency_us of one acquire + release at one contender while nodes-1
//       others lock and unlock the same lock (1 to --max-contenders);
//       methods card-mcs, host-mcs, card-tas; ops_per_s: all contenders.
//       host-mcs follows seed 001's host-based locks: every remote access
//       is a request to the target's server (--lock-server mode), the lock
//       word's at the home and each contender's own for its queue node
//   cpu_impact (seed 001 Fig. 7)
//       iterations: a counting loop at the lock's home, iterations per 1 ms
//       window (mean), while one node locks and unlocks with a delay after
//       each; bytes holds the offered rate, lock/unlock pairs per second
//       (1e6 / (2 * delay_us)); ops_per_s the rate achieved.  Methods: idle
//       (no remote traffic), card (card MCS: nothing runs at the home), and
//       host-block (host MCS, its server thread at the home, blocking), and
//       control (no nicoff: a pipe ping-pong with the same delays on the
//       locker's CPU, see spawn_control).  The
//       counter and the server thread share CPU 0, the locker and the card
//       threads run on the last CPU (as seed 001's uniprocessor runs).
//       Quiet blocks (the locker paused, spinning idle on its CPU) and busy
//       blocks alternate; idle is the median of the card run's quiet
//       windows, each method's figure the median of its busy windows.
//   cpu_share (seed 001 Fig. 7, from the scheduler's accounting)
//       home_cpu_lost_pct: what a counting process pinned to the home CPU
//       (CPU 0) did not get of --share-seconds of wall time, from its
//       /proc/<pid>/schedstat run time; home_cpu_others_pct: the run time
//       of every other task last seen on CPU 0 (/proc/*/task/*/schedstat);
//       home_preemptions_per_s: the counter's involuntary context switches
//       (/proc/<pid>/status).  bytes holds the offered rate as above;
//       methods card, host-block (as in cpu_impact) and control (no lock
//       traffic at all).  The bench itself sleeps on the last CPU meanwhile.
#include "bench.hpp"
#include "procstat.hpp"

#include <nicoff/nicoff.hpp>

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace nicoff::bench {
namespace {

constexpr std::size_t page = 4096;
constexpr std::uint32_t max_nodes = 16;

struct PageBuf {
    std::byte *p;
    PageBuf() : p(static_cast<std::byte *>(::operator new (page, std::align_val_t{page}))) {
        std::memset(p, 0, page);
    }
    ~PageBuf() { ::operator delete (p, std::align_val_t{page}); }
    PageBuf(const PageBuf &) = delete;
    PageBuf &operator=(const PageBuf &) = delete;
    std::span<std::byte> span() const { return {p, page}; }
    std::uint64_t &u64(std::size_t off) const {
        return *reinterpret_cast<std::uint64_t *>(p + off);
    }
};

// How an atomic reaches the home: "card", or one of the server modes.
struct Method {
    std::string name;
    bool host = false;
    ServerMode mode = ServerMode::poll;
};

const std::vector<Method> &methods() {
    static const std::vector<Method> m = {{"card", false, ServerMode::poll},
                                          {"host-poll", true, ServerMode::poll},
                                          {"host-spin", true, ServerMode::spin_block},
                                          {"host-block", true, ServerMode::block}};
    return m;
}

ServerMode parse_mode(const std::string &s) {
    if (s == "poll")
        return ServerMode::poll;
    if (s == "spin")
        return ServerMode::spin_block;
    if (s == "block")
        return ServerMode::block;
    throw std::invalid_argument("server mode must be poll, spin or block");
}

// The home: its memory (the words), registered for card atomics, and, for
// the host-based methods, an AtomicServer thread serving it.
class Home {
public:
    Home(std::uint32_t card, const Method &m, std::chrono::microseconds spin)
        : card_(card), port_(Device(card), PortConfig{NICOFF_PORT_ANY, 256, 256}),
          mr_(port_, mem_.span(), NICOFF_ACCESS_REMOTE_ATOMIC), host_(m.host) {
        if (host_) {
            server_ = std::make_unique<AtomicServer>(port_, mem_.span(), m.mode, spin);
            thread_ = std::thread([this] { server_->serve(stop_); });
        }
    }
    ~Home() {
        stop_ = true;
        if (thread_.joinable())
            thread_.join();
    }
    Home(const Home &) = delete;
    Home &operator=(const Home &) = delete;

    RemoteWord word(std::uint64_t off, std::uint32_t width) const {
        return RemoteWord{card_, port_.number(), host_ ? 0 : mr_.rkey(), width, off};
    }
    std::uint64_t &u64(std::size_t off) const { return mem_.u64(off); }
    std::thread &thread() { return thread_; }

private:
    std::uint32_t card_;
    PageBuf mem_;
    Port port_;
    MemoryRegion mr_;
    bool host_;
    std::unique_ptr<AtomicServer> server_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

std::unique_ptr<RemoteMemory> remote_memory(Port &port, bool host) {
    if (host)
        return std::make_unique<HostMemory>(port);
    return std::make_unique<CardMemory>(port);
}

// Cards for requesters: every card but the home, round robin.
std::uint32_t requester_card(std::uint32_t i, std::uint32_t home, std::uint32_t ncards) {
    if (ncards < 2)
        return home;
    const std::uint32_t c = i % (ncards - 1);
    return c >= home ? c + 1 : c;
}

Fields nodes_runs(std::int64_t nodes, std::uint64_t runs) {
    return {.nodes = nodes, .runs = static_cast<std::int64_t>(runs)};
}

// ------------------------------------------------------------- latency --

struct OpCase {
    const char *name;
    std::uint8_t opcode;
    std::uint32_t width;
};

const OpCase op_cases[] = {
    {"fadd32", NICOFF_OP_FETCH_ADD, 4},     {"fadd64", NICOFF_OP_FETCH_ADD, 8},
    {"swap32", NICOFF_OP_FETCH_WRITE, 4},   {"swap64", NICOFF_OP_FETCH_WRITE, 8},
    {"cas_hit", NICOFF_OP_COMPARE_SWAP, 8}, {"cas_miss", NICOFF_OP_COMPARE_SWAP, 8},
};

void latency(Context &ctx, std::uint32_t home_card, std::uint32_t ncards) {
    const std::uint64_t iters = ctx.opts().u64("iters"), warmup = ctx.opts().u64("warmup");
    const auto spin = std::chrono::microseconds(ctx.opts().u64("server-spin-us"));
    if (iters == 0)
        throw std::invalid_argument("--iters must be at least 1");
    for (const Method &m : methods()) {
        Home home(home_card, m, spin);
        Port port(Device(requester_card(0, home_card, ncards)),
                  PortConfig{NICOFF_PORT_ANY, 64, 64});
        auto mem = remote_memory(port, m.host);
        for (const OpCase &oc : op_cases) {
            const RemoteWord w = home.word(64, oc.width);
            home.u64(64) = 0;
            std::vector<double> samples;
            samples.reserve(iters);
            for (std::uint64_t i = 0; i < warmup + iters; i++) {
                std::uint64_t operand = 1, compare = 0;
                if (oc.opcode == NICOFF_OP_COMPARE_SWAP) {
                    // hit: the word toggles between 0 and 1; miss: never matches.
                    const bool hit = std::string(oc.name) == "cas_hit";
                    compare = hit ? i % 2 : 0xdead;
                    operand = hit ? (i + 1) % 2 : 7;
                }
                const std::uint64_t t0 = now_ns();
                const std::uint64_t old = mem->atomic(oc.opcode, w, operand, compare);
                const std::uint64_t t1 = now_ns();
                if (oc.opcode == NICOFF_OP_FETCH_ADD && old != i)
                    fail(EPROTO, std::string(oc.name) + ": wrong old value");
                if (oc.opcode == NICOFF_OP_COMPARE_SWAP && std::string(oc.name) == "cas_hit" &&
                    old != i % 2)
                    fail(EPROTO, "cas_hit missed");
                if (i >= warmup)
                    samples.push_back(static_cast<double>(t1 - t0) / 1000.0);
            }
            const Summary s = summarize(std::move(samples));
            ctx.add(oc.name, m.name, "latency_us", s.mean, "us", nodes_runs(1, iters));
            ctx.add(oc.name, m.name, "latency_us_median", s.median, "us", nodes_runs(1, iters));
            ctx.add(oc.name, m.name, "latency_us_p99", s.p99, "us", nodes_runs(1, iters));
        }
    }
}

// ---------------------------------------------------------- throughput --

void throughput(Context &ctx, std::uint32_t home_card, std::uint32_t ncards) {
    const std::uint64_t depth = ctx.opts().u64("depth");
    const double seconds = ctx.opts().number("tput-seconds");
    const auto spin = std::chrono::microseconds(ctx.opts().u64("server-spin-us"));
    if (depth == 0 || depth > 1024)
        throw std::invalid_argument("--depth must be in [1, 1024]");
    for (const Method &m : methods()) {
        for (std::uint32_t nreq : {1u, 4u}) {
            Home home(home_card, m, spin);
            const RemoteWord w = home.word(128, 8);
            std::atomic<bool> go{false}, stop{false};
            std::vector<std::uint64_t> counts(nreq);
            std::vector<std::string> errors(nreq);
            std::vector<std::thread> ts;
            for (std::uint32_t r = 0; r < nreq; r++)
                ts.emplace_back([&, r] {
                    try {
                        Port port(Device(requester_card(r, home_card, ncards)),
                                  PortConfig{NICOFF_PORT_ANY, 1024, 1024});
                        std::uint64_t n = 0;
                        if (m.host) {
                            HostMemory mem(port);
                            while (!go)
                                std::this_thread::yield();
                            while (!stop) {
                                mem.fetch_add(w, 1);
                                n++;
                            }
                        } else {
                            std::vector<nicoff_cqe> cqes(256);
                            std::uint64_t out = 0;
                            while (!go)
                                std::this_thread::yield();
                            while (!stop || out) {
                                while (!stop && out < depth &&
                                       port.try_post(make_fetch_add(w, 1, n)))
                                    out++;
                                const std::size_t got = port.poll(cqes);
                                for (std::size_t i = 0; i < got; i++)
                                    if (cqes[i].status)
                                        fail(-cqes[i].status, "throughput: fetch-add failed");
                                out -= got;
                                n += got;
                                if (!got)
                                    std::this_thread::yield();
                            }
                        }
                        counts[r] = n;
                    } catch (const std::exception &e) {
                        errors[r] = e.what();
                        counts[r] = 0;
                    }
                });
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            const std::uint64_t t0 = now_ns();
            go = true;
            std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
            stop = true;
            for (auto &t : ts)
                t.join();
            const double elapsed = static_cast<double>(now_ns() - t0) / 1e9;
            std::uint64_t total = 0;
            for (std::uint32_t r = 0; r < nreq; r++) {
                if (!errors[r].empty())
                    fail(EIO, "throughput: " + errors[r]);
                total += counts[r];
            }
            if (home.u64(128) != total)
                fail(EPROTO, "throughput: the word does not count every fetch-add once");
            ctx.add("fadd64", m.name, "ops_per_s", static_cast<double>(total) / elapsed, "ops/s",
                    nodes_runs(nreq, total));
        }
    }
}

// ---------------------------------------------------------------- locks --

// What the contenders of one lock run share (MAP_SHARED).
struct LockShared {
    RemoteWord qnodes[max_nodes];
    RemoteWord word;
    std::atomic<int> ready;
    std::atomic<int> stop;
    std::atomic<int> holders;
    std::atomic<int> violations;
    std::atomic<std::uint64_t> cycles; // lock + unlock pairs done, by everyone
    std::atomic<int> pause;            // cpu_impact: the locker idles meanwhile
    double lat_us;
    std::uint64_t ops[max_nodes];
    std::uint64_t delay_us;
    ServerMode node_mode; // host-based MCS: how each contender's node server waits
    std::uint64_t node_spin_us;
    char error[256];
};

enum class LockKind { mcs, tas };

void busy_delay(std::uint64_t us) {
    if (!us)
        return;
    if (us >= 50) {
        std::this_thread::sleep_for(std::chrono::microseconds(us));
        return;
    }
    const std::uint64_t end = now_ns() + us * 1000;
    while (now_ns() < end)
        std::this_thread::yield();
}

void pin_self(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof(set), &set);
}

// One contender process.  Rank 0 measures `iters` acquire + release pairs
// (after `warmup`) and then tells the others to stop; with delay_us, each
// pair is followed by that delay after the lock and after the unlock, and
// rank 0 runs until stopped by the parent.
// A contender's queue node served by its own AtomicServer thread (host-based
// locks: the others' writes to it are requests to that server).
class NodeServer {
public:
    NodeServer(std::uint32_t card, std::span<std::byte> node, ServerMode mode,
               std::chrono::microseconds spin)
        : port_(Device(card), PortConfig{NICOFF_PORT_ANY, 256, 256}),
          server_(port_, node, mode, spin), thread_([this] { server_.serve(stop_); }) {}
    ~NodeServer() {
        stop_ = true;
        thread_.join();
    }
    NodeServer(const NodeServer &) = delete;
    NodeServer &operator=(const NodeServer &) = delete;
    std::uint32_t port() const { return port_.number(); }

private:
    Port port_;
    AtomicServer server_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

int contender(LockShared *sh, std::uint32_t rank, std::uint32_t n, std::uint32_t card,
              LockKind kind, bool host, std::uint64_t warmup, std::uint64_t iters, int cpu) {
    int code = 0;
    try {
        if (cpu >= 0)
            pin_self(cpu);
        Port port(Device(card), PortConfig{NICOFF_PORT_ANY, 256, 256});
        PageBuf node;
        MemoryRegion mr(port, node.span(), NICOFF_ACCESS_REMOTE_WRITE);
        std::unique_ptr<NodeServer> ns;
        if (host && kind == LockKind::mcs) {
            ns = std::make_unique<NodeServer>(card, node.span(), sh->node_mode,
                                              std::chrono::microseconds(sh->node_spin_us));
            sh->qnodes[rank] = RemoteWord{card, ns->port(), 0, 8, 0};
        } else {
            sh->qnodes[rank] = RemoteWord{card, port.number(), mr.rkey(), 8, 0};
        }
        sh->ready.fetch_add(1);
        while (sh->ready.load() < static_cast<int>(n))
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        auto mem = remote_memory(port, host);
        std::unique_ptr<McsLock> mcs;
        std::unique_ptr<TasLock> tas;
        if (kind == LockKind::mcs)
            mcs = std::make_unique<McsLock>(*mem, rank,
                                            std::vector<RemoteWord>(sh->qnodes, sh->qnodes + n),
                                            sh->word, node.span().first(McsLock::node_bytes));
        else
            tas = std::make_unique<TasLock>(*mem, rank, sh->word);
        auto cycle = [&] {
            if (mcs)
                mcs->lock();
            else
                tas->lock();
            if (sh->holders.fetch_add(1) != 0)
                sh->violations.fetch_add(1);
            sh->holders.fetch_sub(1);
            busy_delay(sh->delay_us);
            if (mcs)
                mcs->unlock();
            else
                tas->unlock();
            sh->cycles.fetch_add(1, std::memory_order_relaxed);
            busy_delay(sh->delay_us);
        };
        std::uint64_t done = 0;
        if (rank == 0 && iters) {
            for (std::uint64_t i = 0; i < warmup; i++)
                cycle();
            const std::uint64_t t0 = now_ns();
            for (std::uint64_t i = 0; i < iters; i++)
                cycle();
            sh->lat_us = static_cast<double>(now_ns() - t0) / 1000.0 / static_cast<double>(iters);
            done = warmup + iters;
            sh->stop = 1;
        } else {
            while (!sh->stop.load(std::memory_order_relaxed)) {
                if (sh->pause.load(std::memory_order_relaxed)) {
                    // Keep this CPU as busy as when locking: under QEMU the
                    // vCPUs share the host's cores, so an idle vCPU here
                    // would speed up the counter's and bias the baseline.
                    __builtin_ia32_pause();
                    continue;
                }
                cycle();
                done++;
            }
        }
        sh->ops[rank] = done;
        mem->flush();
    } catch (const std::exception &e) {
        std::snprintf(sh->error, sizeof(sh->error), "rank %u: %s", rank, e.what());
        sh->stop = 1;
        code = 1;
    }
    return code;
}

void spawn_contenders(Children &kids, LockShared *sh, std::uint32_t n, std::uint32_t home,
                      std::uint32_t ncards, LockKind kind, bool host, std::uint64_t warmup,
                      std::uint64_t iters, int cpu) {
    for (std::uint32_t r = 0; r < n; r++)
        kids.spawn([=] {
            return contender(sh, r, n, requester_card(r, home, ncards), kind, host, warmup, iters,
                             cpu);
        });
}

// Waits for the contenders.  Once one fails (or after timeout_s) the others
// may wait for a lock that will never come: they are killed.  A failure is
// a note on stderr and false: a starved VM can time a card out (rto_usecs,
// max_retries), and the point is better reported missing than the suite
// lost.  Two holders at once fail the suite.
bool reaped(Children &kids, LockShared *sh, const std::string &what, double timeout_s = 300) {
    const Children::Outcome out = kids.reap(timeout_s);
    if (out == Children::Outcome::timed_out && !sh->error[0])
        std::snprintf(sh->error, sizeof(sh->error), "no progress for %.0f s", timeout_s);
    if (out != Children::Outcome::ok) {
        std::fprintf(stderr, "nicoff-bench: note: %s: lock contender failed: %s\n", what.c_str(),
                     sh->error);
        return false;
    }
    if (sh->violations)
        fail(EPROTO, "two holders of the lock at once");
    return true;
}

void locks(Context &ctx, std::uint32_t home_card, std::uint32_t ncards) {
    const std::uint64_t iters = ctx.opts().u64("lock-iters");
    const std::uint64_t max_c = ctx.opts().u64("max-contenders");
    const auto spin = std::chrono::microseconds(ctx.opts().u64("server-spin-us"));
    const ServerMode mode = parse_mode(ctx.opts().str("lock-server"));
    if (iters == 0 || max_c == 0 || max_c > max_nodes)
        throw std::invalid_argument("--lock-iters >= 1 and --max-contenders in [1, 16]");
    struct LockMethod {
        const char *name;
        LockKind kind;
        bool host;
    };
    const LockMethod lms[] = {{"card-mcs", LockKind::mcs, false},
                              {"host-mcs", LockKind::mcs, true},
                              {"card-tas", LockKind::tas, false}};
    for (std::uint32_t n = 1; n <= max_c; n++) {
        for (const LockMethod &lm : lms) {
            Home home(home_card, Method{lm.name, lm.host, mode}, spin);
            SharedMem<LockShared> shm;
            shm->word = home.word(0, 8);
            shm->node_mode = mode;
            shm->node_spin_us = static_cast<std::uint64_t>(spin.count());
            Children kids;
            spawn_contenders(kids, shm.get(), n, home_card, ncards, lm.kind, lm.host, iters / 10,
                             iters, -1);
            if (!reaped(kids, shm.get(),
                        "lock " + std::string(lm.name) + " with " + std::to_string(n) +
                            " contenders"))
                continue;
            if (home.u64(0) != 0)
                fail(EPROTO, "lock word not free after the run");
            std::uint64_t total = 0;
            for (std::uint32_t r = 0; r < n; r++)
                total += shm->ops[r];
            const double secs = shm->lat_us * 1e-6 * static_cast<double>(iters + iters / 10);
            ctx.add("lock", lm.name, "latency_us", shm->lat_us, "us", nodes_runs(n, iters));
            ctx.add("lock", lm.name, "ops_per_s", secs > 0 ? static_cast<double>(total) / secs : 0,
                    "ops/s", nodes_runs(n, total));
        }
    }
}

// ----------------------------------------------------------- cpu impact --

// Iterations of a counting loop in each of `windows` 1 ms windows.  The
// clock is read once per chunk of iterations, so that the figure is CPU
// work rather than clock reads, and the last chunk's overrun is scaled out.
void count_loop(std::uint64_t windows, std::vector<double> &out) {
    constexpr std::uint64_t chunk = 256;
    for (std::uint64_t w = 0; w < windows; w++) {
        const std::uint64_t start = now_ns();
        std::uint64_t iters = 0, t = start, x = w;
        while (t - start < 1'000'000) {
            for (std::uint64_t i = 0; i < chunk; i++) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                asm volatile("" : "+r"(x)); // one iteration of work, not folded away
            }
            iters += chunk;
            t = now_ns();
        }
        out.push_back(static_cast<double>(iters) * 1e6 / static_cast<double>(t - start));
    }
}

// Puts the card threads on `cpu` (-1: back on every CPU).
void pin_card_threads(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    const int ncpu = static_cast<int>(std::thread::hardware_concurrency());
    for (int c = 0; c < ncpu; c++)
        if (cpu < 0 || c == cpu)
            CPU_SET(c, &set);
    for (const TaskCpu &t : kernel_threads_cpu("nicoff"))
        if (sched_setaffinity(t.pid, sizeof(set), &set))
            std::fprintf(stderr, "nicoff-bench: note: cannot move %s (pid %d): %s\n",
                         t.comm.c_str(), t.pid, std::strerror(errno));
}

// The control of cpu_impact: the same rhythm on the last CPU without
// nicoff.  Two processes there pass a byte to and fro over pipes (a system
// call, a wake-up and a context switch each way, as a lock or an unlock
// that waits for its completion), with the locker's delays after each
// round trip, and spin like the paused locker in quiet blocks.  What the
// counter loses to it is what any such activity on the other vCPU costs a
// vCPU of this emulation: both are threads of one QEMU on the same host.
void spawn_control(Children &kids, LockShared *sh, int cpu) {
    int ping[2], pong[2];
    if (::pipe(ping) || ::pipe(pong))
        fail(errno, "pipe");
    // The locker's rhythm.
    kids.spawn([&] {
        pin_self(cpu);
        ::close(ping[0]);
        ::close(pong[1]);
        sh->ready.fetch_add(1);
        char b = 0;
        int code = 0;
        while (!sh->stop.load(std::memory_order_relaxed) && !code) {
            if (sh->pause.load(std::memory_order_relaxed)) {
                __builtin_ia32_pause();
                continue;
            }
            for (int half = 0; half < 2 && !code; half++) {
                if (::write(ping[1], &b, 1) != 1 || ::read(pong[0], &b, 1) != 1)
                    code = 1;
                busy_delay(sh->delay_us);
            }
            sh->cycles.fetch_add(1, std::memory_order_relaxed);
        }
        return code;
    });
    // The echo: until the pipe closes.
    kids.spawn([&] {
        pin_self(cpu);
        ::close(ping[1]);
        ::close(pong[0]);
        char b = 0;
        while (::read(ping[0], &b, 1) == 1 && ::write(pong[1], &b, 1) == 1) {
        }
        return 0;
    });
    for (int fd : {ping[0], ping[1], pong[0], pong[1]})
        ::close(fd);
}

enum class Traffic { card, host_block, control };

const char *traffic_name(Traffic t) {
    return t == Traffic::card ? "card" : t == Traffic::host_block ? "host-block" : "control";
}

// The remote lock traffic of cpu_impact and cpu_share: a lock at the home
// card, served by the card or by a blocking server thread on CPU 0 (the
// home CPU), and one locker on locker_cpu with delay_us after each lock
// and unlock (paused until shm->pause is cleared).  control: pipe_control
// spawns spawn_control's look-alike, else no traffic at all.
struct LockTraffic {
    LockTraffic(Traffic t, std::uint32_t home_card, std::uint32_t ncards, std::uint64_t delay_us,
                int locker_cpu, bool pipe_control)
        : home(home_card, Method{"", t == Traffic::host_block, ServerMode::block},
               std::chrono::microseconds(0)) {
        if (t == Traffic::host_block) {
            // The server thread shares the counter's CPU.
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(0, &set);
            pthread_setaffinity_np(home.thread().native_handle(), sizeof(set), &set);
        }
        shm->word = home.word(0, 8);
        shm->delay_us = delay_us;
        shm->node_mode = ServerMode::block;
        shm->pause = 1;
        if (t != Traffic::control)
            spawn_contenders(kids, shm.get(), 1, home_card, ncards, LockKind::mcs,
                             t == Traffic::host_block, 0, 0, locker_cpu);
        else if (pipe_control)
            spawn_control(kids, shm.get(), locker_cpu);
        else
            return;
        while (shm->ready.load() < 1 && !shm->stop)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    Home home;
    SharedMem<LockShared> shm;
    Children kids; // last: killed, if not reaped, before the rest goes
};

// Runs body with this process on CPU 0 and the card threads on the last
// CPU, and puts both back whatever happens.
void with_cpus_placed(int self_cpu, const std::function<void(int last)> &body) {
    const int ncpu = static_cast<int>(std::thread::hardware_concurrency());
    const int last = ncpu > 1 ? ncpu - 1 : 0;
    cpu_set_t all;
    sched_getaffinity(0, sizeof(all), &all);
    pin_self(self_cpu < 0 ? last : self_cpu);
    pin_card_threads(last);
    try {
        body(last);
    } catch (...) {
        pin_card_threads(-1);
        sched_setaffinity(0, sizeof(all), &all);
        throw;
    }
    pin_card_threads(-1);
    sched_setaffinity(0, sizeof(all), &all);
}

void cpu_impact(Context &ctx, std::uint32_t home_card, std::uint32_t ncards) {
    const std::uint64_t windows = ctx.opts().u64("cpu-windows");
    const auto delays = ctx.opts().u64_list("cpu-delays-us");
    const std::uint64_t block = 25; // windows per quiet or busy block
    if (windows == 0)
        throw std::invalid_argument("--cpu-windows must be at least 1");
    with_cpus_placed(0, [&](int last) {
        for (std::uint64_t d : delays) {
            const double offered = d ? 1e6 / (2.0 * static_cast<double>(d)) : 0;
            auto rec = [&](const char *method, const char *metric, double v, const char *unit) {
                Fields f = nodes_runs(1, windows);
                f.bytes = static_cast<std::int64_t>(offered);
                ctx.add("cpu_impact", method, metric, v, unit, f);
            };
            for (const Traffic t : {Traffic::card, Traffic::host_block, Traffic::control}) {
                LockTraffic tr(t, home_card, ncards, d, last, true);
                LockShared *shm = tr.shm.get();
                // Quiet and busy blocks alternate, so that the host's load
                // drifting during the run hits both alike; medians of windows.
                std::vector<double> quiet, busy;
                std::uint64_t cycles = 0, busy_ns = 0;
                for (std::uint64_t done = 0; done < windows && !shm->stop; done += block) {
                    const std::uint64_t n = std::min(block, windows - done);
                    shm->pause = 1;
                    std::this_thread::sleep_for(std::chrono::milliseconds(20));
                    count_loop(n, quiet);
                    shm->pause = 0;
                    std::this_thread::sleep_for(std::chrono::milliseconds(20));
                    const std::uint64_t t0 = now_ns(), c0 = shm->cycles.load();
                    count_loop(n, busy);
                    busy_ns += now_ns() - t0;
                    cycles += shm->cycles.load() - c0;
                }
                shm->stop = 1;
                const char *method = traffic_name(t);
                if (!reaped(tr.kids, shm,
                            "cpu_impact " + std::string(method) + ", delay " + std::to_string(d) +
                                " us"))
                    continue;
                if (t == Traffic::card)
                    rec("idle", "iterations", summarize(quiet).median, "iter/ms");
                rec(method, "iterations", summarize(busy).median, "iter/ms");
                rec(method, "ops_per_s",
                    busy_ns ? static_cast<double>(cycles) * 1e9 / static_cast<double>(busy_ns) : 0,
                    "ops/s");
            }
        }
    });
}

// What the counting process of cpu_share shares with the bench.
struct CounterShared {
    std::atomic<int> pid;
    std::atomic<int> stop;
};

// Run time of the tasks last seen on `cpu` between two snapshots, but the
// task `except`; a task that appeared meanwhile counts from zero.
std::uint64_t others_on_cpu(const std::vector<TaskRun> &before, const std::vector<TaskRun> &after,
                            int cpu, int except) {
    std::uint64_t ns = 0;
    for (const TaskRun &a : after) {
        if (a.cpu != cpu || a.tid == except)
            continue;
        std::uint64_t prev = 0;
        for (const TaskRun &b : before)
            if (b.tid == a.tid) {
                prev = b.run_ns;
                break;
            }
        if (a.run_ns > prev)
            ns += a.run_ns - prev;
    }
    return ns;
}

void cpu_share(Context &ctx, std::uint32_t home_card, std::uint32_t ncards) {
    const double seconds = ctx.opts().number("share-seconds");
    const auto delays = ctx.opts().u64_list("cpu-delays-us");
    if (!(seconds > 0))
        throw std::invalid_argument("--share-seconds must be positive");
    // The bench only sleeps and reads /proc meanwhile: off the home CPU.
    with_cpus_placed(-1, [&](int last) {
        for (std::uint64_t d : delays) {
            const double offered = d ? 1e6 / (2.0 * static_cast<double>(d)) : 0;
            for (const Traffic t : {Traffic::card, Traffic::host_block, Traffic::control}) {
                LockTraffic tr(t, home_card, ncards, d, last, false);
                SharedMem<CounterShared> cs;
                Children counter;
                counter.spawn([&] {
                    pin_self(0);
                    cs->pid = ::getpid();
                    std::uint64_t x = 1;
                    while (!cs->stop.load(std::memory_order_relaxed)) {
                        x = x * 6364136223846793005ull + 1442695040888963407ull;
                        asm volatile("" : "+r"(x)); // work, not folded away
                    }
                    return 0;
                });
                while (!cs->pid.load())
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
                tr.shm->pause = 0;
                std::this_thread::sleep_for(std::chrono::milliseconds(100)); // settle
                const int pid = cs->pid.load();
                const std::vector<TaskRun> tasks0 = all_tasks_run();
                const std::uint64_t c0 = tr.shm->cycles.load(), t0 = now_ns();
                const auto s0 = process_sched(pid);
                std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
                const std::uint64_t t1 = now_ns(), c1 = tr.shm->cycles.load();
                const auto s1 = process_sched(pid);
                const std::vector<TaskRun> tasks1 = all_tasks_run();
                cs->stop = 1;
                tr.shm->stop = 1;
                const char *method = traffic_name(t);
                const std::string what =
                    "cpu_share " + std::string(method) + ", delay " + std::to_string(d) + " us";
                if (counter.reap(60) != Children::Outcome::ok)
                    fail(EIO, what + ": the counting process failed");
                if (!s0 || !s1)
                    fail(ENOENT, what + ": no /proc/<pid>/schedstat or status for the counter");
                if (t != Traffic::control && !reaped(tr.kids, tr.shm.get(), what))
                    continue;
                const double wall = static_cast<double>(t1 - t0);
                const double ran = static_cast<double>(s1->sched.run_ns - s0->sched.run_ns);
                Fields f = nodes_runs(1, 1);
                f.bytes = static_cast<std::int64_t>(offered);
                auto rec = [&](const char *metric, double v, const char *unit) {
                    ctx.add("cpu_share", method, metric, v, unit, f);
                };
                rec("home_cpu_lost_pct", std::max(0.0, 100.0 * (1.0 - ran / wall)), "%");
                rec("home_cpu_others_pct",
                    100.0 * static_cast<double>(others_on_cpu(tasks0, tasks1, 0, pid)) / wall, "%");
                rec("home_preemptions_per_s",
                    static_cast<double>(s1->involuntary - s0->involuntary) * 1e9 / wall, "1/s");
                rec("ops_per_s", static_cast<double>(c1 - c0) * 1e9 / wall, "ops/s");
            }
        }
    });
}

void run(Context &ctx) {
    const std::uint32_t home = static_cast<std::uint32_t>(ctx.opts().u64("home"));
    const std::string parts = ctx.opts().str("parts");
    const DeviceInfo info = Device(home).info();
    if (info.num_cards < 2)
        fail(EINVAL, "the atomic suite needs at least two cards");
    auto want = [&](const char *p) {
        return parts == "all" ||
               ("," + parts + ",").find(std::string(",") + p + ",") != std::string::npos;
    };
    if (want("latency"))
        latency(ctx, home, info.num_cards);
    if (want("throughput"))
        throughput(ctx, home, info.num_cards);
    if (want("lock"))
        locks(ctx, home, info.num_cards);
    if (want("cpu"))
        cpu_impact(ctx, home, info.num_cards);
    if (want("cpu_share"))
        cpu_share(ctx, home, info.num_cards);
}

const SuiteRegistrar reg{{
    "atomic",
    "remote atomics by the card vs host-based servers; MCS and TAS locks; CPU impact",
    {
        {"home", "card of the atomics' target and of the lock's home", "1"},
        {"parts", "comma-separated: latency, throughput, lock, cpu, cpu_share (or all)", "all"},
        {"iters", "operations timed per latency case", "2000"},
        {"warmup", "untimed operations before each latency case", "100"},
        {"depth", "outstanding fetch-adds per requester (card throughput)", "64"},
        {"tput-seconds", "duration of each throughput run", "1"},
        {"lock-iters", "acquire + release pairs timed at the measuring contender", "200"},
        {"max-contenders", "lock runs with 1 .. this many contenders", "8"},
        {"lock-server", "host-mcs server mode: poll, spin or block", "spin"},
        {"server-spin-us", "spin-then-block: how long the server spins", "50"},
        {"cpu-windows", "1 ms counting windows per cpu_impact point", "300"},
        {"cpu-delays-us", "cpu_impact: delays after lock and after unlock",
         "2000,1000,500,200,100,50"},
        {"share-seconds", "cpu_share: seconds measured per offered rate and method", "2"},
    },
    run,
}};

} // namespace
} // namespace nicoff::bench
