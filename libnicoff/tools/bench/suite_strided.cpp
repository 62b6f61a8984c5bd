// Suite "strided": seed 004's Fig. 6, the bandwidth of a put of a 2-D square
// sub-block of doubles between two cards, one port on each, both driven by
// one process.  For each side s of --sides the source array has s rows of
// s + --src-extra doubles and the destination array s rows of
// s + --dst-extra, the block in the middle of each row: the shape is
// count = {8s, s} with stride s + extra doubles on each side.  Records
// square2d/METHOD, mb_per_s (10^6 bytes/s), bytes = 8 s^2 the block,
// chunk = 8 s (count[0]), the median of --repeat runs of the same number of
// blocks (--bytes worth, at least one, at most --max-ops), methods in turn.
// Seed 004's methods (nic, naive, hbna, auto; ctc on a second, unpipelined
// engine) run on the library's nicoff::StridedEngine: every block is
// started at once and the engine keeps as many in flight as the command
// ring (1024 entries), its naive window or its HBNA slots take, so the
// methods differ only by method, not by how the host drives them, and auto
// (which runs one of the others) is compared with them on equal terms.
// contig and vector are posted by the suite, at most --depth blocks in
// flight:
//
//   nic     the engine's nic: one NICOFF_OP_PUT_STRIDED per block, the
//           card walks the shape
//   naive   the engine's naive: one contiguous PUT per chunk
//   contig  one contiguous PUT of the block's bytes per block: what the
//           data path does without a shape
//   memcpy  the CPU copying the block row by row between the same arrays
//   vector  the block's rows as a list of segments, NICOFF_OP_PUT_VECTOR
//           (ARMCI's PutV) through nicoff::Strided, a command per 64 rows:
//           recorded as vector/nic, with the same fields
//   hbna    nicoff::StridedEngine's host-based, NIC-assisted put to a
//           StridedTarget over the destination array on card b (seed 004
//           section 5.1): packed, put into the target's buffers, unpacked
//           by its thread, pipelined in --piece pieces
//   auto    the engine's choice per block from its calibrated model
//   ctc     HBNA one piece at a time (copy, transmit, copy): recorded with
//           hbna as hbna_pipeline/copy_transmit_copy and hbna_pipeline/hbna
//
// square2d/nic/naive, nic/contig and best/auto (the best of nic, hbna and
// naive) and hbna_pipeline/hbna/copy_transmit_copy: ratio_paired, the
// median of the ratios of two methods' figures in the same repeat.
//
// Each method's first block of each size is not timed: its destination is
// checked byte for byte (the block's rows where they belong, every other
// byte untouched) and the suite fails on a difference.  --sides none leaves
// Fig. 6 out.
//
// Then seed 004's Fig. 8, the kernels of --apps (srumma, halo) run by
// several processes with each method: strided_apps.cpp.
#include "bench.hpp"
#include "strided_apps.hpp"
#include "twocards.hpp"

#include <nicoff/nicoff.hpp>
#include <nicoff/strided.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace nicoff::bench {
namespace {

constexpr std::uint32_t ring = 1024;
constexpr std::uint64_t max_size = 64ull << 20; // the card's largest message
constexpr std::uint64_t dbl = sizeof(double);
constexpr std::byte untouched{0xa5}; // what the destination holds before a checked block

enum class Method { nic, naive, contig, memcpy, vector, hbna, automatic, ctc };

// The records' methods and --methods' words.
constexpr std::array<Named<Method>, 8> method_names = {{
    {Method::nic, "nic"},
    {Method::naive, "naive"},
    {Method::contig, "contig"},
    {Method::memcpy, "memcpy"},
    {Method::vector, "vector"},
    {Method::hbna, "hbna"},
    {Method::automatic, "auto"},
    {Method::ctc, "ctc"},
}};

// The block of one size in both arrays, in bytes.
struct Square {
    std::uint64_t side = 0;               // doubles per row and rows
    std::uint64_t src_ld = 0, dst_ld = 0; // row lengths of the full arrays
    std::uint64_t src_off = 0, dst_off = 0;

    Square(std::uint64_t s, std::uint64_t src_extra, std::uint64_t dst_extra)
        : side(s), src_ld((s + src_extra) * dbl), dst_ld((s + dst_extra) * dbl),
          src_off(src_extra / 2 * dbl), dst_off(dst_extra / 2 * dbl) {}
    std::uint64_t chunk() const { return side * dbl; }
    std::uint64_t bytes() const { return side * side * dbl; }
    std::uint64_t src_bytes() const { return side * src_ld; }
    std::uint64_t dst_bytes() const { return side * dst_ld; }
};

// One end: a port and what its completions said.  Only PUTs and vector
// PUTs are posted (contig, vector): anything else completing, or an error,
// fails the run.
struct End {
    explicit End(const Device &dev)
        : port(dev, PortConfig{NICOFF_PORT_ANY, ring, ring}), cqes(64) {}

    Port port;
    std::vector<nicoff_cqe> cqes;
    std::uint64_t done = 0;    // completions seen
    std::uint64_t moved = 0;   // bytes they reported
    std::uint64_t last_ns = 0; // when the latest was seen

    bool pump() {
        const auto got = take_completions(port, cqes);
        for (const nicoff_cqe &c : got) {
            if (c.opcode != NICOFF_OP_PUT && c.opcode != NICOFF_OP_PUT_VECTOR)
                fail(EPROTO, "unexpected completion, opcode " + std::to_string(c.opcode));
            done++;
            moved += c.result;
        }
        if (!got.empty())
            last_ns = now_ns();
        return !got.empty();
    }

    bool sleep = true; // wait() sleeps, or returns at once (spinning)

    void wait() const {
        if (sleep)
            sleep_for_completion({&port});
    }

    // Takes the completions there are, or with none waits for one; throws
    // after 10 s without one since last, which it moves on.
    void round(std::uint64_t &last, const char *what) {
        if (pump())
            last = now_ns();
        else if (now_ns() - last > stall_ns)
            fail(ETIMEDOUT, std::string(what) + ": no completion for 10 s");
        else
            wait();
    }
};

// The arrays of one size: the source registered on a's port, the
// destination on b's with remote write.
struct Arrays {
    Arrays(End &a, End &b, const Square &sq)
        : src(sq.src_bytes()), dst(sq.dst_bytes()), src_mr(a.port, src, NICOFF_ACCESS_LOCAL_WRITE),
          dst_mr(b.port, dst, NICOFF_ACCESS_LOCAL_WRITE | NICOFF_ACCESS_REMOTE_WRITE) {
        // A pattern that differs from row to row and from size to size, so
        // that a chunk in the wrong place shows.
        std::uint64_t x = 0x9e3779b97f4a7c15ull ^ sq.side;
        for (std::byte &v : src) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v = static_cast<std::byte>(x >> 32);
        }
    }
    std::vector<std::byte> src, dst;
    MemoryRegion src_mr, dst_mr;
};

// The library's methods: an engine on a port of its own on card a (it
// owns the port's completions), pipelined or not, the source array
// registered there too, and the StridedTarget serving the destination array.
struct Engines {
    Engines(const TwoCards &cards, std::uint64_t piece)
        : pipe_port(cards.a, PortConfig{NICOFF_PORT_ANY, ring, ring}),
          ctc_port(cards.a, PortConfig{NICOFF_PORT_ANY, ring, ring}),
          pipelined(pipe_port, StridedOptions{.hbna_piece = piece}),
          ctc(ctc_port, StridedOptions{.hbna_piece = piece, .hbna_pipelined = false}) {}
    Port pipe_port, ctc_port;
    StridedEngine pipelined, ctc;
};

// What every run of a size shares.
struct Run {
    End &a;
    End &b;
    Strided &strided;
    const Square &sq;
    Arrays &arr;
    std::uint64_t depth = 0;
    Engines *eng = nullptr;
    const MemoryRegion *pipe_src = nullptr, *ctc_src = nullptr;
    StridedPeer peer;

    RemoteRegion remote() const { return {b.port.card(), b.port.number(), arr.dst_mr.rkey()}; }
};

// n blocks, each posted by post(i) (which returns false on a full ring),
// at most depth in flight; returns the seconds from the first post to the
// last completion.
double pipelined(Run &r, std::uint64_t n, const std::function<bool(std::uint64_t)> &post,
                 const char *what) {
    const std::uint64_t base = r.a.done;
    std::uint64_t posted = 0;
    const std::uint64_t t0 = now_ns();
    std::uint64_t last = t0;
    while (r.a.done - base < n) {
        while (posted < n && posted - (r.a.done - base) < r.depth && post(posted))
            posted++;
        r.a.round(last, what);
    }
    return static_cast<double>(r.a.last_ns - t0) / 1e9;
}

double contig_run(Run &r, std::uint64_t n) {
    return pipelined(
        r, n,
        [&](std::uint64_t i) {
            return r.a.port.try_post(make_rdma(NICOFF_OP_PUT, r.b.port.card(), r.b.port.number(),
                                               r.arr.dst_mr.rkey(), 0, r.arr.src_mr.handle(), 0,
                                               r.sq.bytes(), i));
        },
        "contig");
}

// n blocks copied by the CPU, row by row.
double memcpy_run(Run &r, std::uint64_t n) {
    const std::uint64_t t0 = now_ns();
    for (std::uint64_t i = 0; i < n; i++) {
        for (std::uint64_t row = 0; row < r.sq.side; row++)
            std::memcpy(r.arr.dst.data() + r.sq.dst_off + row * r.sq.dst_ld,
                        r.arr.src.data() + r.sq.src_off + row * r.sq.src_ld, r.sq.chunk());
        // The copies are what is measured: the compiler may not merge or drop
        // them because dst is not read here.
        asm volatile("" : : "r"(r.arr.dst.data()) : "memory");
    }
    return static_cast<double>(std::max<std::uint64_t>(now_ns() - t0, 1)) / 1e9;
}

// n blocks, each its rows as vector puts of at most NICOFF_VECTOR_MAX_SEGS segments.
double vector_run(Run &r, std::uint64_t n) {
    std::vector<Segment> rows;
    for (std::uint64_t row = 0; row < r.sq.side; row++)
        rows.push_back(
            {r.sq.src_off + row * r.sq.src_ld, r.sq.dst_off + row * r.sq.dst_ld, r.sq.chunk()});
    const std::uint64_t per = NICOFF_VECTOR_MAX_SEGS;
    const std::uint64_t cmds = (rows.size() + per - 1) / per;
    const RemoteRegion rem = r.remote();
    return pipelined(
        r, n * cmds,
        [&](std::uint64_t i) {
            const std::uint64_t at = i % cmds * per;
            return r.strided.try_put_vector(
                r.arr.src_mr, rem,
                std::span(rows).subspan(at, std::min<std::uint64_t>(per, rows.size() - at)), i);
        },
        "vector");
}

// n blocks through an engine, all started at once (the engine bounds what
// is in flight); the bytes they moved count as the port's completions do.
double engine_run(Run &r, std::uint64_t n, Method m) {
    StridedEngine &e = m == Method::ctc ? r.eng->ctc : r.eng->pipelined;
    const MemoryRegion &src = m == Method::ctc ? *r.ctc_src : *r.pipe_src;
    const StridedMethod how = m == Method::nic         ? StridedMethod::nic
                              : m == Method::naive     ? StridedMethod::naive
                              : m == Method::automatic ? StridedMethod::automatic
                                                       : StridedMethod::hbna;
    const std::array<std::uint64_t, 2> count = {r.sq.chunk(), r.sq.side};
    const std::array<std::uint64_t, 1> ss = {r.sq.src_ld}, ds = {r.sq.dst_ld};
    const std::uint64_t t0 = now_ns();
    for (std::uint64_t i = 0; i < n; i++)
        e.start_put(how, src, StridedSide{r.sq.src_off, ss}, r.peer, StridedSide{r.sq.dst_off, ds},
                    count, i);
    for (std::uint64_t i = 0; i < n; i++) {
        const StridedDone d = e.wait_any(std::chrono::milliseconds(stall_ns / 1'000'000));
        if (d.status)
            fail(-d.status, std::string("square2d/") + std::string(method_name(d.method)) +
                                (m == Method::ctc ? " (ctc)" : "") + ": a put failed");
        r.a.moved += d.bytes;
    }
    return static_cast<double>(std::max<std::uint64_t>(now_ns() - t0, 1)) / 1e9;
}

double run_method(Method m, Run &r, std::uint64_t n) {
    switch (m) {
    case Method::contig:
        return contig_run(r, n);
    case Method::memcpy:
        return memcpy_run(r, n);
    case Method::vector:
        return vector_run(r, n);
    case Method::nic:
    case Method::naive:
    case Method::hbna:
    case Method::automatic:
    case Method::ctc:
        return engine_run(r, n, m);
    }
    fail(EINVAL, "strided: unknown method");
}

bool all_are(std::span<const std::byte> s, std::byte v) {
    return std::all_of(s.begin(), s.end(), [v](std::byte b) { return b == v; });
}

// The destination after one block of method m on an `untouched` array:
// contig has the source's first bytes() bytes at the start, the others the
// block's rows each at its place; every other byte is untouched.
void check(Method m, const char *name, const Square &sq, const Arrays &arr) {
    const std::span<const std::byte> src(arr.src), dst(arr.dst);
    const std::string where = std::string("square2d/") + name + ", side " + std::to_string(sq.side);
    if (m == Method::contig) {
        if (!std::equal(dst.begin(), dst.begin() + static_cast<std::ptrdiff_t>(sq.bytes()),
                        src.begin()) ||
            !all_are(dst.subspan(sq.bytes()), untouched))
            fail(EIO, where + ": the destination differs from the source");
        return;
    }
    for (std::uint64_t row = 0; row < sq.side; row++) {
        const auto line = dst.subspan(row * sq.dst_ld, sq.dst_ld);
        const auto want = src.subspan(row * sq.src_ld + sq.src_off, sq.chunk());
        const auto got = line.subspan(sq.dst_off, sq.chunk());
        if (!std::equal(got.begin(), got.end(), want.begin()))
            fail(EIO, where + ": row " + std::to_string(row) + " of the block differs");
        if (!all_are(line.first(sq.dst_off), untouched) ||
            !all_are(line.subspan(sq.dst_off + sq.chunk()), untouched))
            fail(EIO,
                 where + ": a byte outside the block was written in row " + std::to_string(row));
    }
}

// Fig. 6 and 7: the square blocks between two cards.
// Ratios of methods timed in the same repeat, seconds apart at most: their
// median (record ratio_paired) is the comparison of issue 13's goals.  The
// VM's host slows some blocks by a third now and then; a ratio of two
// methods' medians takes each median from different blocks and shows such
// a stall as a method's cost, a ratio within one repeat mostly cancels it.
// best/auto: the best of nic, hbna and naive in that repeat over auto's.
void add_paired(Context &ctx, const std::vector<const Named<Method> *> &methods,
                const std::vector<std::vector<double>> &rates, const Fields &fields) {
    auto index = [&](Method m) -> std::optional<std::size_t> {
        for (std::size_t i = 0; i < methods.size(); i++)
            if (methods[i]->value == m)
                return i;
        return std::nullopt;
    };
    auto add = [&](const char *c, const char *method, auto &&num, std::size_t den) {
        std::vector<double> r;
        for (std::size_t k = 0; k < rates[den].size(); k++)
            if (rates[den][k] > 0)
                r.push_back(num(k) / rates[den][k]);
        if (!r.empty())
            ctx.add(c, method, "ratio_paired", summarize(r).median, "x", fields);
    };
    const auto nic = index(Method::nic), naive = index(Method::naive),
               contig = index(Method::contig), hbna = index(Method::hbna),
               automatic = index(Method::automatic), ctc = index(Method::ctc);
    if (nic && naive)
        add(
            "square2d", "nic/naive", [&](std::size_t k) { return rates[*nic][k]; }, *naive);
    if (nic && contig)
        add(
            "square2d", "nic/contig", [&](std::size_t k) { return rates[*nic][k]; }, *contig);
    if (hbna && ctc)
        add(
            "hbna_pipeline", "hbna/copy_transmit_copy",
            [&](std::size_t k) { return rates[*hbna][k]; }, *ctc);
    if (automatic && (nic || hbna || naive))
        add(
            "square2d", "best/auto",
            [&](std::size_t k) {
                double best = 0;
                for (const auto i : {nic, hbna, naive})
                    if (i)
                        best = std::max(best, rates[*i][k]);
                return best;
            },
            *automatic);
}

// Each repeat's figure, on stderr: a stall shows as one repeat's dip.
void log_repeats(std::uint64_t side, const std::vector<const Named<Method> *> &methods,
                 const std::vector<std::vector<double>> &rates) {
    std::string line = "square2d side " + std::to_string(side) + " MB/s per repeat:";
    for (std::size_t i = 0; i < methods.size(); i++) {
        line += std::string(" ") + methods[i]->name;
        for (const double v : rates[i]) {
            char buf[32];
            std::snprintf(buf, sizeof(buf), " %.1f", v);
            line += buf;
        }
        line += ";";
    }
    std::fprintf(stderr, "%s\n", line.c_str());
}

void run_squares(Context &ctx) {
    const Options &o = ctx.opts();
    const std::vector<std::uint64_t> sides = o.u64_list("sides");
    const std::uint64_t src_extra = o.u64("src-extra"), dst_extra = o.u64("dst-extra");
    const std::uint64_t depth = o.u64("depth"), bytes = o.u64("bytes");
    const std::uint64_t max_ops = o.u64("max-ops"), repeat = o.u64("repeat");
    std::vector<const Named<Method> *> methods;
    for (const std::string &w : o.list("methods")) {
        const auto it = std::find_if(method_names.begin(), method_names.end(),
                                     [&](const Named<Method> &mn) { return w == mn.name; });
        if (it == method_names.end())
            throw std::invalid_argument("--methods: unknown method '" + w +
                                        "' (nic, naive, contig, memcpy, vector, hbna, auto, ctc)");
        methods.push_back(&*it);
    }
    if (methods.empty())
        throw std::invalid_argument("--methods: empty list");
    if (depth == 0 || depth > ring || max_ops == 0 || repeat == 0)
        throw std::invalid_argument("--max-ops and --repeat must be at least 1, --depth in [1, " +
                                    std::to_string(ring) + "]");
    for (const std::uint64_t s : sides)
        if (s == 0 || s > max_size / dbl / s)
            throw std::invalid_argument("--sides: " + std::to_string(s) +
                                        " doubles squared is not in [8 B, 64 MiB]");
    if (src_extra > max_size / dbl || dst_extra > max_size / dbl)
        throw std::invalid_argument("--src-extra and --dst-extra: at most " +
                                    std::to_string(max_size / dbl));
    const TwoCards cards(o);

    const bool sleep = wait_sleeps(o, "wait");
    End a(cards.a), b(cards.b);
    a.sleep = sleep;
    Strided strided(a.port);
    Engines engines(cards, o.u64("piece"));
    for (const std::uint64_t side : sides) {
        const Square sq(side, src_extra, dst_extra);
        Arrays arr(a, b, sq);
        const MemoryRegion pipe_src(engines.pipe_port, arr.src, NICOFF_ACCESS_LOCAL_WRITE);
        const MemoryRegion ctc_src(engines.ctc_port, arr.src, NICOFF_ACCESS_LOCAL_WRITE);
        const StridedTarget target(b.port.card(), arr.dst);
        Run r{a, b, strided, sq, arr, depth, &engines, &pipe_src, &ctc_src, {}};
        r.peer = {r.remote(), target.address()};
        const std::uint64_t n = std::clamp<std::uint64_t>(bytes / sq.bytes(), 1, max_ops);

        // One block per method, checked; also the warm-up.
        for (const Named<Method> *mn : methods) {
            std::fill(arr.dst.begin(), arr.dst.end(), untouched);
            const std::uint64_t moved = a.moved;
            run_method(mn->value, r, 1);
            const std::uint64_t want = mn->value == Method::memcpy ? 0 : sq.bytes();
            if (a.moved - moved != want)
                fail(EIO, std::string("square2d/") + mn->name + ": the completions report " +
                              std::to_string(a.moved - moved) + " bytes, not " +
                              std::to_string(want));
            check(mn->value, mn->name, sq, arr);
        }

        // The methods in turn, so that each sees the same machine.
        std::vector<std::vector<double>> rates(methods.size());
        for (std::uint64_t rep = 0; rep < repeat; rep++)
            for (std::size_t i = 0; i < methods.size(); i++) {
                const double secs = run_method(methods[i]->value, r, n);
                rates[i].push_back(static_cast<double>(n * sq.bytes()) / secs / 1e6);
            }
        // What auto runs for this shape (its model's pick, the same for every block).
        if (std::any_of(methods.begin(), methods.end(),
                        [](const Named<Method> *mn) { return mn->value == Method::automatic; })) {
            const std::array<std::uint64_t, 2> count = {sq.chunk(), sq.side};
            std::fprintf(stderr, "square2d/auto side %llu: runs %s\n",
                         static_cast<unsigned long long>(side),
                         std::string(method_name(engines.pipelined.resolve(StridedMethod::automatic,
                                                                           count, r.peer)))
                             .c_str());
        }
        const Fields fields{.nodes = 2,
                            .bytes = static_cast<std::int64_t>(sq.bytes()),
                            .runs = static_cast<std::int64_t>(repeat),
                            .chunk = static_cast<std::int64_t>(sq.chunk())};
        for (std::size_t i = 0; i < methods.size(); i++) {
            const Method m = methods[i]->value;
            const double mb = summarize(rates[i]).median;
            if (m == Method::vector)
                ctx.add("vector", "nic", "mb_per_s", mb, "MB/s", fields);
            else if (m == Method::ctc)
                ctx.add("hbna_pipeline", "copy_transmit_copy", "mb_per_s", mb, "MB/s", fields);
            else
                ctx.add("square2d", methods[i]->name, "mb_per_s", mb, "MB/s", fields);
            // Pipelined HBNA is also the other half of Fig. 7's right-hand pair.
            if (m == Method::hbna)
                ctx.add("hbna_pipeline", "hbna", "mb_per_s", mb, "MB/s", fields);
        }
        add_paired(ctx, methods, rates, fields);
        log_repeats(side, methods, rates);
    }
}

void run(Context &ctx) {
    if (ctx.opts().str("sides") != "none")
        run_squares(ctx);
    run_strided_apps(ctx);
}

std::vector<OptionSpec> strided_options() {
    std::vector<OptionSpec> opts = {
        peer_option(),
        {"sides", "block sides in doubles, comma-separated (none: no square blocks)",
         "8,16,32,64,128,256,512,1024,2048"},
        {"src-extra", "doubles each source row has beyond the block (the block in the middle)",
         "128"},
        {"dst-extra", "doubles each destination row has beyond the block", "64"},
        {"methods", "comma-separated: nic, naive, contig, memcpy, vector, hbna, auto, ctc",
         "nic,naive,contig,memcpy,vector,hbna,auto,ctc"},
        {"piece", "hbna, auto and ctc: bytes per HBNA piece (0: the target's 256 KiB buffers)",
         "65536"},
        {"depth", "contig and vector: at most this many blocks in flight", "1024"},
        {"bytes", "bytes per run and size (at least one block)", "16777216"},
        {"max-ops", "at most this many blocks per run (small sides: enough to outlast the noise)",
         "16384"},
        {"repeat", "runs per size and method (the median is reported)", "5"},
        {"wait", "contig and vector: with nothing to do, sleep in poll(2) or spin", "sleep"},
    };
    for (OptionSpec &a : strided_app_options())
        opts.push_back(std::move(a));
    return opts;
}

const SuiteRegistrar registrar{{
    "strided",
    "put of a 2-D square block of doubles out of a larger array between two cards (seed 004 "
    "Fig. 6): the card walking the shape, a PUT per row, a contiguous PUT, memcpy, the rows "
    "as a vector put, HBNA pipelined and not, and auto; and seed 004 Fig. 8's SRUMMA and halo "
    "kernels over several processes by method",
    strided_options(),
    run,
}};

} // namespace
} // namespace nicoff::bench
