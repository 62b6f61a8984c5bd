// Seed 004's Fig. 8 in the strided suite: two application kernels, each
// run by --app-ranks processes (rank r on card r % cards, its data exposed
// on its port, a StridedTarget over the same bytes for HBNA) with every
// method of --app-methods in turn, --app-repeat times each:
//
//   srumma  C = A B for square matrices of --srumma-n doubles on a p x p
//           grid of ranks (p * p = --app-ranks).  Each rank holds its
//           blocks of A and B (b = n / p doubles square, row-major) and
//           computes its block of C, SRUMMA's way: the blocks it needs are
//           fetched with strided gets, the next strip while the current
//           one is multiplied.  A block is fetched in --srumma-strips
//           strips: a strip of A is b rows of b / strips doubles out of
//           rows of b (a 1-level shape of short chunks), a strip of B whole
//           rows (contiguous).  Ranks start at different blocks so that
//           they do not all fetch from one rank at once.
//   halo    a 3-D array of doubles block-distributed over a px x py x pz
//           grid of ranks (the most even factors of --app-ranks), an edge
//           of --halo-n per rank and a ghost layer round it.  Each of
//           --halo-iters steps puts every face into the neighbour's ghost
//           layer (periodic; none along an axis of one rank), then sweeps
//           the block along x, y and z as BT's solver does.  An x face is
//           n * n single doubles (a 2-level shape of 8-byte chunks), a y or
//           z face n rows of n.
//
// Records srumma/METHOD and halo/METHOD, nodes = the ranks, bytes = what
// one run moves in all, each the median of the runs:
//   comm_s        the seconds a rank spent communicating (posting, and
//                 waiting for what it needs next), the mean over ranks;
//   target_cpu_s  the CPU seconds the ranks' StridedTargets spent packing
//                 and unpacking for others, summed over ranks: HBNA's
//                 hidden cost, paid by the target processes (0 for the
//                 methods the card runs);
//   wall_s        the slowest rank's time for the run.
// Each method's first run is not timed but checked: srumma's C against the
// product of the formulas that filled A and B, halo's ghost layers after
// the first exchange against the values of the neighbours' faces.
#include "strided_apps.hpp"

#include "collective.hpp"
#include "shmbarrier.hpp"

#include <nicoff/job.hpp>
#include <nicoff/nicoff.hpp>
#include <nicoff/strided.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

namespace nicoff::bench {
namespace {

constexpr std::size_t max_app_runs = 64;
constexpr std::uint64_t dbl = sizeof(double);
constexpr std::uint32_t app_ring = 1024;
constexpr std::chrono::milliseconds app_stall{30000};

struct AppShared {
    RankFailure failure;
    ShmBarrierState barrier;
    StridedPeer peers[max_ranks];
    double comm_s[max_app_runs][max_ranks];
    double wall_s[max_app_runs][max_ranks];
    double target_s[max_app_runs][max_ranks];
};

// What a kernel's run works with.
struct AppEnv {
    StridedEngine &eng;
    StridedMethod method;
    const MemoryRegion &exposed; // the kernel's exposed() on the engine's port
    std::span<const StridedPeer> peers;
    ShmBarrier &barrier;
    bool check; // verify what arrived (the untimed first run)
};

// One rank's part of a kernel.
class Kernel {
public:
    virtual ~Kernel() = default;
    // The bytes the other ranks reach (by rkey and through the target).
    virtual std::span<std::byte> exposed() = 0;
    // Registers the kernel's local buffers on the engine's port.
    virtual void attach(Port &port) = 0;
    // One run; returns the seconds spent communicating.
    virtual double run(const AppEnv &env) = 0;
    // What one run of this rank moves, in bytes.
    virtual std::uint64_t bytes_moved() const = 0;
};

// Waits for operations of an engine by tag: others finishing meanwhile
// are kept until their turn comes.
class Waiter {
public:
    Waiter(StridedEngine &eng, std::string what) : eng_(eng), what_(std::move(what)) {}
    void wait(std::uint64_t tag) {
        while (!done_.erase(tag)) {
            const StridedDone d = eng_.wait_any(app_stall);
            if (d.status)
                fail(-d.status, what_ + ": operation " + std::to_string(d.tag) + " failed");
            done_.insert(d.tag);
        }
    }

private:
    StridedEngine &eng_;
    std::string what_;
    std::unordered_set<std::uint64_t> done_;
};

double seconds_since(std::uint64_t t0) { return static_cast<double>(now_ns() - t0) / 1e9; }

// ----------------------------------------------------------------- srumma --

// The entries of A and B: small integers, so that every sum is exact.
double a_at(std::uint64_t r, std::uint64_t c) {
    return static_cast<double>(static_cast<int>((r * 7 + c * 3) % 11) - 5);
}
double b_at(std::uint64_t r, std::uint64_t c) {
    return static_cast<double>(static_cast<int>((r * 5 + c * 2) % 13) - 6);
}

class Srumma final : public Kernel {
public:
    Srumma(std::uint32_t rank, std::uint32_t p, std::uint64_t n, std::uint64_t strips)
        : p_(p), i_(rank / p), j_(rank % p), b_(n / p), w_(n / p / strips), strips_(strips),
          ab_(2 * b_ * b_), c_(b_ * b_), bufs_(4 * b_ * w_) {
        for (std::uint64_t r = 0; r < b_; r++)
            for (std::uint64_t c = 0; c < b_; c++) {
                ab_[r * b_ + c] = a_at(i_ * b_ + r, j_ * b_ + c);
                ab_[b_ * b_ + r * b_ + c] = b_at(i_ * b_ + r, j_ * b_ + c);
            }
    }

    std::span<std::byte> exposed() override { return std::as_writable_bytes(std::span(ab_)); }
    void attach(Port &port) override {
        bufs_mr_.emplace(port, std::as_writable_bytes(std::span(bufs_)), NICOFF_ACCESS_LOCAL_WRITE);
    }
    std::uint64_t bytes_moved() const override { return 2 * p_ * b_ * b_ * dbl; }

    double run(const AppEnv &env) override {
        std::fill(c_.begin(), c_.end(), 0.0);
        const std::uint64_t steps = p_ * strips_;
        Waiter waiter(env.eng, "srumma");
        double comm = 0;
        const std::uint64_t t0 = now_ns();
        post(env, 0);
        comm += seconds_since(t0);
        for (std::uint64_t t = 0; t < steps; t++) {
            const std::uint64_t t1 = now_ns();
            if (t + 1 < steps)
                post(env, t + 1);
            waiter.wait(2 * t);
            waiter.wait(2 * t + 1);
            comm += seconds_since(t1);
            multiply(t % 2);
        }
        if (env.check)
            verify();
        return comm;
    }

private:
    // The strips of step t into buffer slot t % 2: A's from rank (i, k),
    // B's from rank (k, j), k the step's block of the inner dimension.
    void post(const AppEnv &env, std::uint64_t t) {
        const std::uint64_t k = (i_ + j_ + t / strips_) % p_, s = t % strips_, slot = t % 2;
        const StridedPeer &pa = env.peers[i_ * p_ + k], &pb = env.peers[k * p_ + j_];
        const std::array<std::uint64_t, 2> a_count = {w_ * dbl, b_};
        const std::array<std::uint64_t, 1> a_remote = {b_ * dbl}, a_local = {w_ * dbl};
        env.eng.start_get(env.method, pa, StridedSide{s * w_ * dbl, a_remote}, *bufs_mr_,
                          StridedSide{slot * b_ * w_ * dbl, a_local}, a_count, 2 * t);
        const std::array<std::uint64_t, 1> b_count = {w_ * b_ * dbl};
        env.eng.start_get(env.method, pb, StridedSide{(b_ * b_ + s * w_ * b_) * dbl, {}}, *bufs_mr_,
                          StridedSide{(2 + slot) * b_ * w_ * dbl, {}}, b_count, 2 * t + 1);
    }

    // C += (A strip, b x w) (B strip, w x b).
    void multiply(std::uint64_t slot) {
        const double *a = bufs_.data() + slot * b_ * w_;
        const double *bs = bufs_.data() + (2 + slot) * b_ * w_;
        for (std::uint64_t r = 0; r < b_; r++) {
            double *crow = c_.data() + r * b_;
            for (std::uint64_t x = 0; x < w_; x++) {
                const double av = a[r * w_ + x];
                const double *brow = bs + x * b_;
                for (std::uint64_t c = 0; c < b_; c++)
                    crow[c] += av * brow[c];
            }
        }
    }

    void verify() const {
        const std::uint64_t n = p_ * b_;
        std::vector<double> want(b_);
        for (std::uint64_t r = 0; r < b_; r++) {
            std::fill(want.begin(), want.end(), 0.0);
            for (std::uint64_t g = 0; g < n; g++) {
                const double av = a_at(i_ * b_ + r, g);
                for (std::uint64_t c = 0; c < b_; c++)
                    want[c] += av * b_at(g, j_ * b_ + c);
            }
            for (std::uint64_t c = 0; c < b_; c++)
                if (c_[r * b_ + c] != want[c])
                    fail(EIO, "srumma: C(" + std::to_string(i_ * b_ + r) + ", " +
                                  std::to_string(j_ * b_ + c) + ") is " +
                                  std::to_string(c_[r * b_ + c]) + ", not " +
                                  std::to_string(want[c]));
        }
    }

    std::uint64_t p_, i_, j_, b_, w_, strips_;
    std::vector<double> ab_; // this rank's block of A, then of B
    std::vector<double> c_;
    std::vector<double> bufs_; // two A strips (b x w), then two B strips (w x b)
    std::optional<MemoryRegion> bufs_mr_;
};

// ------------------------------------------------------------------- halo --

// px * py * pz = ranks, as even as the factors allow (px >= py >= pz).
std::array<std::uint32_t, 3> grid_of(std::uint32_t ranks) {
    std::array<std::uint32_t, 3> best = {ranks, 1, 1};
    for (std::uint32_t z = 1; z * z * z <= ranks; z++) {
        if (ranks % z)
            continue;
        for (std::uint32_t y = z; y * y <= ranks / z; y++)
            if (ranks / z % y == 0)
                best = {ranks / z / y, y, z}; // the last found is the most even
    }
    return best;
}

// The value a cell of the global array starts with: exact, and different
// for every cell.
double cell_value(std::uint64_t x, std::uint64_t y, std::uint64_t z) {
    return static_cast<double>(x + 1000 * y + 1000000 * z);
}

class Halo final : public Kernel {
public:
    Halo(std::uint32_t rank, std::uint32_t ranks, std::uint64_t n, std::uint64_t iters)
        : dims_(grid_of(ranks)), n_(n), e_(n + 2), iters_(iters), u_(e_ * e_ * e_) {
        at_ = {rank % dims_[0], rank / dims_[0] % dims_[1], rank / (dims_[0] * dims_[1])};
        for (std::uint32_t d = 0; d < 3; d++) {
            if (dims_[d] == 1)
                continue;
            // My first plane into the lower neighbour's upper ghost plane,
            // my last into the upper neighbour's lower one.
            add_face(d, neighbour(d, dims_[d] - 1), 1, n_ + 1);
            add_face(d, neighbour(d, 1), n_, 0);
        }
    }

    std::span<std::byte> exposed() override { return std::as_writable_bytes(std::span(u_)); }
    void attach(Port &) override {}
    std::uint64_t bytes_moved() const override { return iters_ * faces_.size() * n_ * n_ * dbl; }

    double run(const AppEnv &env) override {
        fill();
        Waiter waiter(env.eng, "halo");
        double comm = 0;
        std::uint64_t tag = 0;
        for (std::uint64_t it = 0; it < iters_; it++) {
            // Every neighbour has swept with its ghosts: they may change.
            env.barrier.wait();
            const std::uint64_t t0 = now_ns();
            const std::uint64_t first = tag;
            for (const Face &f : faces_) {
                const std::span<const std::uint64_t> count(f.count.data(), f.levels + 1);
                const std::span<const std::uint64_t> stride(f.stride.data(), f.levels);
                env.eng.start_put(env.method, env.exposed, StridedSide{f.from, stride},
                                  env.peers[f.peer], StridedSide{f.to, stride}, count, tag++);
            }
            for (std::uint64_t t = first; t < tag; t++)
                waiter.wait(t);
            comm += seconds_since(t0);
            // Every face this rank needs has landed.
            env.barrier.wait();
            if (env.check && it == 0)
                verify();
            sweep();
        }
        env.barrier.wait();
        return comm;
    }

private:
    struct Face {
        std::uint32_t peer = 0;
        std::uint64_t from = 0, to = 0; // byte offsets of the first cell
        std::array<std::uint64_t, 3> count{};
        std::array<std::uint64_t, 2> stride{};
        std::size_t levels = 0;
    };

    std::uint64_t idx(std::uint64_t x, std::uint64_t y, std::uint64_t z) const {
        return (z * e_ + y) * e_ + x;
    }

    std::uint32_t neighbour(std::uint32_t d, std::uint32_t step) const {
        std::array<std::uint32_t, 3> c = at_;
        c[d] = (c[d] + step) % dims_[d];
        return c[0] + dims_[0] * (c[1] + dims_[1] * c[2]);
    }

    // The plane q of axis d (its interior cells) from this rank's plane
    // `from` to the peer's plane `to`.
    void add_face(std::uint32_t d, std::uint32_t peer, std::uint64_t from, std::uint64_t to) {
        const std::uint64_t row = e_ * dbl, plane = e_ * e_ * dbl;
        Face f;
        f.peer = peer;
        auto first = [&](std::uint64_t q) {
            return dbl * (d == 0 ? idx(q, 1, 1) : d == 1 ? idx(1, q, 1) : idx(1, 1, q));
        };
        f.from = first(from);
        f.to = first(to);
        if (d == 0) {
            f.count = {dbl, n_, n_};
            f.stride = {row, plane};
            f.levels = 2;
        } else {
            f.count = {n_ * dbl, n_, 0};
            f.stride = {d == 1 ? plane : row, 0};
            f.levels = 1;
        }
        faces_.push_back(f);
    }

    std::uint64_t global(std::uint32_t d, std::uint64_t q) const {
        const std::uint64_t len = n_ * dims_[d];
        return (at_[d] * n_ + len + q - 1) % len; // q = 0 and n + 1 wrap round
    }

    void fill() {
        std::fill(u_.begin(), u_.end(), -1.0);
        for (std::uint64_t z = 1; z <= n_; z++)
            for (std::uint64_t y = 1; y <= n_; y++)
                for (std::uint64_t x = 1; x <= n_; x++)
                    u_[idx(x, y, z)] = cell_value(global(0, x), global(1, y), global(2, z));
    }

    // The ghost cells the faces fill (one coordinate a ghost plane of an
    // axis with more than one rank, the others inside) hold the
    // neighbour's values.
    void verify() const {
        for (std::uint32_t d = 0; d < 3; d++) {
            if (dims_[d] == 1)
                continue;
            for (const std::uint64_t q : {std::uint64_t{0}, n_ + 1})
                for (std::uint64_t s = 1; s <= n_; s++)
                    for (std::uint64_t t = 1; t <= n_; t++) {
                        std::array<std::uint64_t, 3> c = {s, t, t};
                        c[d] = q;
                        c[(d + 1) % 3] = s;
                        c[(d + 2) % 3] = t;
                        const double want =
                            cell_value(global(0, c[0]), global(1, c[1]), global(2, c[2]));
                        const double got = u_[idx(c[0], c[1], c[2])];
                        if (got != want)
                            fail(EIO, "halo: ghost cell (" + std::to_string(c[0]) + ", " +
                                          std::to_string(c[1]) + ", " + std::to_string(c[2]) +
                                          ") of axis " + std::to_string(d) + " is " +
                                          std::to_string(got) + ", not " + std::to_string(want));
                    }
        }
    }

    // BT's three directional sweeps, each a forward pass of a smoothing
    // recurrence along every line of the block (reading the ghost cells).
    void sweep() {
        const std::array<std::uint64_t, 3> step = {1, e_, e_ * e_};
        for (std::uint32_t d = 0; d < 3; d++) {
            const std::uint64_t s = step[d];
            const std::uint64_t o1 = step[(d + 1) % 3], o2 = step[(d + 2) % 3];
            for (std::uint64_t a = 1; a <= n_; a++)
                for (std::uint64_t b = 1; b <= n_; b++) {
                    double *line = u_.data() + a * o1 + b * o2;
                    for (std::uint64_t q = 1; q <= n_; q++)
                        line[q * s] =
                            0.25 * (line[(q - 1) * s] + 2 * line[q * s] + line[(q + 1) * s]);
                }
        }
    }

    std::array<std::uint32_t, 3> dims_, at_{};
    std::uint64_t n_, e_, iters_;
    std::vector<double> u_;
    std::vector<Face> faces_;
};

// ------------------------------------------------------------------ runs --

struct AppParams {
    std::string app;
    std::uint32_t ranks = 0, cards = 0;
    std::uint64_t repeat = 0;
    std::vector<StridedMethod> methods;
    std::uint64_t srumma_n = 0, srumma_strips = 0, halo_n = 0, halo_iters = 0;
};

// The side p of srumma's p x p grid: the smallest with p * p >= ranks
// (check_params refuses a count that is no square).
std::uint32_t srumma_side(std::uint32_t ranks) {
    std::uint32_t p = 1;
    while (p * p < ranks)
        p++;
    return p;
}

std::unique_ptr<Kernel> make_kernel(const AppParams &ap, std::uint32_t rank) {
    if (ap.app == "srumma")
        return std::make_unique<Srumma>(rank, srumma_side(ap.ranks), ap.srumma_n, ap.srumma_strips);
    return std::make_unique<Halo>(rank, ap.ranks, ap.halo_n, ap.halo_iters);
}

void app_rank(AppShared *sh, const AppParams &ap, std::uint32_t rank) {
    const Job job(rank, ap.ranks, ap.cards, default_port_base);
    Port port = job.open_port(PortConfig{NICOFF_PORT_ANY, app_ring, app_ring});
    const std::unique_ptr<Kernel> k = make_kernel(ap, rank);
    const MemoryRegion exposed(port, k->exposed(),
                               NICOFF_ACCESS_LOCAL_WRITE | NICOFF_ACCESS_REMOTE_READ |
                                   NICOFF_ACCESS_REMOTE_WRITE);
    k->attach(port);
    StridedTarget target(port.card(), k->exposed());
    StridedEngine eng(port);
    sh->peers[rank] =
        StridedPeer{RemoteRegion{port.card(), port.number(), exposed.rkey()}, target.address()};
    ShmBarrier barrier(sh->barrier, std::chrono::microseconds(0));
    // auto's model is measured (or read from its cache) before any timing.
    if (std::find(ap.methods.begin(), ap.methods.end(), StridedMethod::automatic) !=
        ap.methods.end())
        eng.model();
    barrier.wait();
    const std::span<const StridedPeer> peers(sh->peers, ap.ranks);
    std::size_t at = 0;
    for (const StridedMethod m : ap.methods) {
        k->run(AppEnv{eng, m, exposed, peers, barrier, true});
        for (std::uint64_t rep = 0; rep < ap.repeat; rep++, at++) {
            barrier.wait();
            const StridedTarget::Stats s0 = target.stats();
            const std::uint64_t t0 = now_ns();
            sh->comm_s[at][rank] = k->run(AppEnv{eng, m, exposed, peers, barrier, false});
            sh->wall_s[at][rank] = seconds_since(t0);
            // Every rank's operations are done, so every piece this
            // rank's target served for them is counted.
            barrier.wait();
            const StridedTarget::Stats s1 = target.stats();
            sh->target_s[at][rank] = static_cast<double>(s1.unpack_cpu_ns - s0.unpack_cpu_ns +
                                                         s1.pack_cpu_ns - s0.pack_cpu_ns) /
                                     1e9;
        }
    }
    // No rank's target goes while another may still reach it.
    barrier.wait();
}

void check_params(const AppParams &ap) {
    if (ap.ranks < 1 || ap.ranks > max_ranks)
        throw std::invalid_argument("--app-ranks: 1.." + std::to_string(max_ranks));
    if (ap.repeat < 1 || ap.methods.size() * ap.repeat > max_app_runs)
        throw std::invalid_argument("--app-repeat: at least 1, and at most " +
                                    std::to_string(max_app_runs) +
                                    " runs of all --app-methods together");
    if (ap.app == "srumma") {
        const std::uint32_t p = srumma_side(ap.ranks);
        if (p * p != ap.ranks)
            throw std::invalid_argument("srumma: --app-ranks must be a square (p x p grid)");
        if (ap.srumma_strips == 0 || ap.srumma_n == 0 || ap.srumma_n % (p * ap.srumma_strips))
            throw std::invalid_argument(
                "srumma: --srumma-n must be a non-zero multiple of the grid side (" +
                std::to_string(p) + ") times --srumma-strips");
        if (ap.srumma_n > 8192)
            throw std::invalid_argument("srumma: --srumma-n at most 8192");
    } else if (ap.halo_n == 0 || ap.halo_n > 512 || ap.halo_iters == 0) {
        throw std::invalid_argument("halo: --halo-n in [1, 512], --halo-iters at least 1");
    }
}

void run_app(Context &ctx, const AppParams &ap) {
    check_params(ap);
    SharedMem<AppShared> shm;
    AppShared *sh = shm.get();
    sh->barrier.init(ap.ranks);
    run_ranks(ap.ranks, sh->failure, "strided " + ap.app + " N=" + std::to_string(ap.ranks),
              [&](std::uint32_t r) { app_rank(sh, ap, r); });
    std::uint64_t bytes = 0;
    for (std::uint32_t r = 0; r < ap.ranks; r++)
        bytes += make_kernel(ap, r)->bytes_moved();
    const Fields fields{.nodes = ap.ranks,
                        .bytes = static_cast<std::int64_t>(bytes),
                        .runs = static_cast<std::int64_t>(ap.repeat)};
    std::size_t at = 0;
    for (const StridedMethod m : ap.methods) {
        std::vector<double> comm, target, wall;
        for (std::uint64_t rep = 0; rep < ap.repeat; rep++, at++) {
            double c = 0, t = 0, w = 0;
            for (std::uint32_t r = 0; r < ap.ranks; r++) {
                c += sh->comm_s[at][r];
                t += sh->target_s[at][r];
                w = std::max(w, sh->wall_s[at][r]);
            }
            comm.push_back(c / ap.ranks);
            target.push_back(t);
            wall.push_back(w);
        }
        const std::string name(method_name(m));
        ctx.add(ap.app, name, "comm_s", summarize(comm).median, "s", fields);
        ctx.add(ap.app, name, "target_cpu_s", summarize(target).median, "s", fields);
        ctx.add(ap.app, name, "wall_s", summarize(wall).median, "s", fields);
    }
}

} // namespace

std::vector<OptionSpec> strided_app_options() {
    return {
        {"apps", "seed 004 Fig. 8 kernels, comma-separated: srumma, halo; or none", "srumma,halo"},
        {"app-ranks", "processes running each kernel (rank r on card r % cards)", "4"},
        {"app-methods", "the kernels' methods: nic, hbna, naive, auto", "nic,hbna,naive,auto"},
        {"app-repeat", "timed runs of each kernel and method (the median is reported)", "3"},
        {"srumma-n", "srumma: matrix order (a multiple of the grid side x --srumma-strips)", "256"},
        {"srumma-strips", "srumma: strips each block of A and B is fetched in", "4"},
        {"halo-n", "halo: the edge of each rank's block, in doubles", "24"},
        {"halo-iters", "halo: exchanges and sweeps per run", "10"},
    };
}

void run_strided_apps(Context &ctx) {
    const Options &o = ctx.opts();
    const std::vector<std::string> apps = o.list("apps");
    if (apps.empty() || (apps.size() == 1 && apps[0] == "none"))
        return;
    AppParams ap;
    for (const std::string &w : o.list("app-methods")) {
        const auto m = parse_strided_method(w);
        if (!m)
            throw std::invalid_argument("--app-methods: unknown method '" + w +
                                        "' (nic, hbna, naive, auto)");
        ap.methods.push_back(*m);
    }
    if (ap.methods.empty())
        throw std::invalid_argument("--app-methods: empty list");
    ap.ranks = static_cast<std::uint32_t>(std::min<std::uint64_t>(o.u64("app-ranks"), ~0u));
    ap.repeat = o.u64("app-repeat");
    ap.srumma_n = o.u64("srumma-n");
    ap.srumma_strips = o.u64("srumma-strips");
    ap.halo_n = o.u64("halo-n");
    ap.halo_iters = o.u64("halo-iters");
    ap.cards = Device(static_cast<unsigned>(o.u64("card"))).info().num_cards;
    for (const std::string &a : apps) {
        if (a != "srumma" && a != "halo")
            throw std::invalid_argument("--apps: unknown kernel '" + a + "' (srumma, halo, none)");
        ap.app = a;
        run_app(ctx, ap);
    }
}

} // namespace nicoff::bench
