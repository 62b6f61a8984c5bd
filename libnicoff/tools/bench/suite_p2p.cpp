// Suite "p2p": messages between two cards, one port on each, both driven by
// one thread of one process (it plays both ends, so neither end waits for a
// CPU the other one holds; the card threads have the rest).  In the order
// of the records:
//
//   nop/batch1           rtt_us, rtt_us_median: the NOP round trip through
//                        the rings of one port (the doorbell suite's), the
//                        yardstick of the figures below in the same boot
//   pingpong/send_recv   latency_us: half round trip of an 8-byte message
//                        (send, receive, send back, receive, each receive
//                        posted again), the mean; latency_us_median,
//                        latency_us_p99
//   bandwidth/METHOD     mb_per_s (10^6 bytes/s) for each of --sizes, the
//                        median of --repeat runs of the same number of
//                        messages (--bytes of them, at most --max-msgs, at
//                        least 2 x --depth), --depth of them in flight:
//                        send_recv  SENDs into RECVs, each receive posted
//                                   again as it completes; timed to the
//                                   last RECV completion
//                        put, get   PUTs into, GETs from the other card's
//                                   region (registered with remote read and
//                                   write), --depth slots of it in turn;
//                                   timed to the last completion
//                        memcpy     the CPU copying the same blocks into
//                                   the same --depth slots: what the card's
//                                   data path is measured against
//   logp/send_recv       the LogP parameters of 8-byte messages as the seed
//                        paper (section 2, after Culler et al.) uses them,
//                        medians of many samples:
//                        o_s_us  send overhead: CPU time to post one SEND
//                        o_r_us  receive overhead: CPU time to take one
//                                RECV completion and post its buffer again
//                        o_us    (o_s + o_r) / 2
//                        L_us    one message costs o_s + L + o_r, so
//                                L = half round trip - o_s - o_r
//                        g_us    n messages sent back to back arrive, the
//                                last one, o_s + L + o_r + (n-1) max(o_s, g)
//                                after the first post: (T(n) - T(1)) / (n-1)
//                                measures max(o_s, g)
//   bandwidth_drop/METHOD  mb_per_s as bandwidth, for send_recv, put and
//                        get, with the global fault_drop_ppm tunable set to
//                        --drop-ppm for the case and put back afterwards
//                        (also when the case fails; cards given faults of
//                        their own with nicoffctl keep them)
#include "bench.hpp"
#include "nop.hpp"
#include "tunable.hpp"
#include "twocards.hpp"

#include <nicoff/nicoff.hpp>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace nicoff::bench {
namespace {

constexpr std::uint64_t small_msg = 8;
constexpr std::uint64_t small_buf = 64;
constexpr std::uint32_t ring = 1024;
constexpr std::uint64_t max_size = 64ull << 20; // the card's largest message
constexpr std::uint32_t rma_target_access =
    NICOFF_ACCESS_LOCAL_WRITE | NICOFF_ACCESS_REMOTE_READ | NICOFF_ACCESS_REMOTE_WRITE;

// One end: a port, a registered buffer, and what its completions said.
struct End {
    End(const Device &dev, std::size_t bytes, std::uint32_t access)
        : port(dev, PortConfig{NICOFF_PORT_ANY, ring, ring}), mem(bytes), mr(port, mem, access),
          cqes(64) {}

    Port port;
    std::vector<std::byte> mem;
    MemoryRegion mr;
    std::vector<nicoff_cqe> cqes;
    std::uint64_t sends = 0, recvs = 0, nops = 0, rmas = 0; // completions seen
    std::uint64_t last_recv_ns = 0;       // when the latest RECV completion was seen
    std::uint64_t last_rma_ns = 0;        // when the latest PUT or GET completion was seen
    std::vector<std::uint64_t> recv_tags; // RECV completions the caller has not handled

    void check(const nicoff_cqe &c) {
        if (c.opcode == NICOFF_OP_RECV) {
            recvs++;
            last_recv_ns = now_ns();
            recv_tags.push_back(c.tag);
        } else if (c.opcode == NICOFF_OP_SEND) {
            sends++;
        } else if (c.opcode == NICOFF_OP_NOP) {
            nops++;
        } else if (c.opcode == NICOFF_OP_PUT || c.opcode == NICOFF_OP_GET) {
            rmas++;
            last_rma_ns = now_ns();
        } else {
            fail(EPROTO, "unexpected completion, opcode " + std::to_string(c.opcode));
        }
    }

    // Takes every completion there is; false if there was none.
    bool pump() {
        const auto got = take_completions(port, cqes);
        for (const nicoff_cqe &c : got)
            check(c);
        return !got.empty();
    }

    void post(const nicoff_cmd &c) {
        const std::uint64_t t0 = now_ns();
        while (!port.try_post(c)) {
            pump();
            if (now_ns() - t0 > stall_ns)
                fail(ETIMEDOUT, "command ring full for 10 s");
        }
    }

    nicoff_cmd recv(std::uint64_t off, std::uint64_t len, std::uint64_t tag) const {
        return make_recv(mr.handle(), off, len, NICOFF_ANY, NICOFF_ANY, 0, 0, tag);
    }
};

// Two ends on two cards; a fresh pair per case, so that no receive posted by
// one case is left for the next.  b's region has access_b.
struct Pair {
    Pair(const Device &da, const Device &db, std::size_t bytes_a, std::size_t bytes_b,
         std::uint32_t access_b = NICOFF_ACCESS_LOCAL_WRITE)
        : a(da, bytes_a, NICOFF_ACCESS_LOCAL_WRITE), b(db, bytes_b, access_b),
          card_a(da.info().card), card_b(db.info().card) {}
    End a, b;
    std::uint32_t card_a, card_b;

    nicoff_cmd a_to_b(std::uint64_t off, std::uint64_t len, std::uint64_t tag) const {
        return make_send(card_b, b.port.number(), a.mr.handle(), off, len, tag, tag);
    }
    nicoff_cmd b_to_a(std::uint64_t off, std::uint64_t len, std::uint64_t tag) const {
        return make_send(card_a, a.port.number(), b.mr.handle(), off, len, tag, tag);
    }
    // A PUT (a's bytes at off into b's region at remote_off) or a GET (the
    // other way round), posted by a.
    nicoff_cmd a_rma(std::uint8_t opcode, std::uint64_t off, std::uint64_t remote_off,
                     std::uint64_t len, std::uint64_t tag) const {
        return make_rdma(opcode, card_b, b.port.number(), b.mr.rkey(), remote_off, a.mr.handle(),
                         off, len, tag);
    }

    // Pumps both ends until done() holds, spinning or sleeping in poll(2)
    // between completions; throws after 10 s without progress.
    template <typename Done>
    void until(Done done, const char *what, bool sleep = false) {
        std::uint64_t last = now_ns();
        while (!done()) {
            const bool pa = a.pump();
            const bool pb = b.pump();
            if (pa || pb)
                last = now_ns();
            else if (now_ns() - last > stall_ns)
                fail(ETIMEDOUT, std::string(what) + ": no completion for 10 s");
            else if (sleep)
                sleep_for_completion({&a.port, &b.port});
        }
    }

    // One round of a bandwidth loop: pumps both ends; with nothing done and
    // sleep, leaves the CPU to the card threads until a completion comes, and
    // pumps again.  Throws after 10 s without progress since last, which it
    // moves on.
    void round(bool sleep, std::uint64_t &last) {
        bool pa = a.pump();
        bool pb = b.pump();
        if (!pa && !pb && sleep) {
            sleep_for_completion({&a.port, &b.port});
            pa = a.pump();
            pb = b.pump();
        }
        if (pa || pb)
            last = now_ns();
        else if (now_ns() - last > stall_ns)
            fail(ETIMEDOUT, "bandwidth: no completion for 10 s");
    }

    // The card takes commands in ring order: once a NOP posted after some
    // receives completes, those receives are in place.
    void barrier(End &e) {
        const std::uint64_t n = e.nops;
        e.post(make_nop(~0ull));
        until([&] { return e.nops > n; }, "barrier");
    }
};

// The fields of a record of two cards.
Fields two(std::int64_t bytes, std::uint64_t runs) {
    return {.nodes = 2, .bytes = bytes, .runs = static_cast<std::int64_t>(runs)};
}

// Half round trips of an 8-byte message, in microseconds.
std::vector<double> pingpong(const Device &da, const Device &db, std::uint64_t warmup,
                             std::uint64_t runs, bool sleep) {
    Pair p(da, db, 4096, 4096);
    for (std::uint64_t i = 0; i < 4; i++) {
        p.a.post(p.a.recv(0, small_buf, i));
        p.b.post(p.b.recv(0, small_buf, i));
    }
    p.barrier(p.a);
    p.barrier(p.b);
    std::vector<double> out;
    out.reserve(runs);
    for (std::uint64_t i = 0; i < warmup + runs; i++) {
        const std::uint64_t ra = p.a.recvs, rb = p.b.recvs;
        const std::uint64_t t0 = now_ns();
        p.a.post(p.a_to_b(small_buf, small_msg, i));
        p.until([&] { return p.b.recvs > rb; }, "pingpong", sleep);
        p.b.post(p.b.recv(0, small_buf, p.b.recv_tags.back()));
        p.b.post(p.b_to_a(small_buf, small_msg, i));
        p.until([&] { return p.a.recvs > ra; }, "pingpong", sleep);
        p.a.post(p.a.recv(0, small_buf, p.a.recv_tags.back()));
        const std::uint64_t t1 = now_ns();
        p.a.recv_tags.clear();
        p.b.recv_tags.clear();
        if (i >= warmup)
            out.push_back(static_cast<double>(t1 - t0) / 2000.0);
    }
    p.until([&] { return p.a.sends == warmup + runs && p.b.sends == warmup + runs; }, "pingpong");
    return out;
}

// MB/s of `count` messages of `size` bytes, `depth` in flight.
double bandwidth_once(const Device &da, const Device &db, std::uint64_t size, std::uint64_t depth,
                      std::uint64_t count, bool sleep) {
    Pair p(da, db, size, size * depth);
    std::uint64_t rposted = 0, sposted = 0;
    for (; rposted < depth && rposted < count; rposted++)
        p.b.post(p.b.recv(rposted * size, size, rposted));
    p.barrier(p.b);
    const std::uint64_t t0 = now_ns();
    std::uint64_t last = t0;
    while (p.b.recvs < count) {
        for (; sposted < count && sposted - p.a.sends < depth; sposted++)
            p.a.post(p.a_to_b(0, size, sposted));
        p.round(sleep, last);
        // A buffer back in use as long as more messages are to come.
        for (const std::uint64_t slot : p.b.recv_tags)
            if (rposted < count) {
                p.b.post(p.b.recv(slot * size, size, slot));
                rposted++;
            }
        p.b.recv_tags.clear();
    }
    const double secs = static_cast<double>(p.b.last_recv_ns - t0) / 1e9;
    p.until([&] { return p.a.sends == count; }, "bandwidth");
    return static_cast<double>(size * count) / secs / 1e6;
}

// MB/s of `count` PUTs or GETs (opcode) of `size` bytes between a and b's
// region, `depth` in flight, each in the next of `depth` slots on both sides.
// A PUT completes once b has its bytes, a GET once a has them.
double rma_once(const Device &da, const Device &db, std::uint8_t opcode, std::uint64_t size,
                std::uint64_t depth, std::uint64_t count, bool sleep) {
    Pair p(da, db, size * depth, size * depth, rma_target_access);
    std::uint64_t posted = 0;
    const std::uint64_t t0 = now_ns();
    std::uint64_t last = t0;
    while (p.a.rmas < count) {
        for (; posted < count && posted - p.a.rmas < depth; posted++) {
            const std::uint64_t off = posted % depth * size;
            p.a.post(p.a_rma(opcode, off, off, size, posted));
        }
        // b has no completion of its own to take: one there (a remote access
        // error) fails the run.
        p.round(sleep, last);
    }
    const double secs = static_cast<double>(p.a.last_rma_ns - t0) / 1e9;
    return static_cast<double>(size * count) / secs / 1e6;
}

// MB/s of the CPU copying `count` blocks of `size` bytes from one buffer into
// the next of `depth` slots: what a SEND does between the two ends' buffers.
double memcpy_once(std::uint64_t size, std::uint64_t depth, std::uint64_t count) {
    std::vector<std::byte> src(size, std::byte{0x5a}), dst(size * depth);
    const std::uint64_t t0 = now_ns();
    for (std::uint64_t i = 0; i < count; i++) {
        std::memcpy(dst.data() + i % depth * size, src.data(), size);
        // The copies are what is measured: the compiler may not merge or drop
        // them because dst is never read.
        asm volatile("" : : "r"(dst.data()) : "memory");
    }
    const double secs = static_cast<double>(std::max<std::uint64_t>(now_ns() - t0, 1)) / 1e9;
    return static_cast<double>(size * count) / secs / 1e6;
}

enum class Method { memcpy, send_recv, put, get };

constexpr std::array<Named<Method>, 4> method_names = {{
    {Method::memcpy, "memcpy"},
    {Method::send_recv, "send_recv"},
    {Method::put, "put"},
    {Method::get, "get"},
}};

// What every bandwidth run of a case shares.
struct BandwidthRuns {
    std::vector<std::uint64_t> sizes;
    std::uint64_t depth = 0, bytes = 0, max_msgs = 0, repeat = 0;
    bool sleep = true;

    // Messages per run of size bytes: --bytes of them within [2 x depth,
    // max(max_msgs, 2 x depth)], so that small sizes take no longer than
    // large ones do and every run fills the pipeline twice.
    std::uint64_t count(std::uint64_t size) const {
        return std::max(std::min(bytes / size, max_msgs), 2 * depth);
    }
};

double bandwidth_of(Method m, const Device &da, const Device &db, const BandwidthRuns &bw,
                    std::uint64_t size) {
    const std::uint64_t n = bw.count(size);
    switch (m) {
    case Method::memcpy:
        return memcpy_once(size, bw.depth, n);
    case Method::send_recv:
        return bandwidth_once(da, db, size, bw.depth, n, bw.sleep);
    case Method::put:
        return rma_once(da, db, NICOFF_OP_PUT, size, bw.depth, n, bw.sleep);
    case Method::get:
        return rma_once(da, db, NICOFF_OP_GET, size, bw.depth, n, bw.sleep);
    }
    fail(EINVAL, "bandwidth: unknown method");
}

// One record per size and method, the methods of a size measured one after
// the other so that they see the same machine.
void bandwidth_case(Context &ctx, const char *case_name, std::span<const Method> methods,
                    const Device &da, const Device &db, const BandwidthRuns &bw) {
    for (const std::uint64_t size : bw.sizes)
        for (const Named<Method> &mn : method_names) {
            if (std::find(methods.begin(), methods.end(), mn.value) == methods.end())
                continue;
            std::vector<double> rates;
            for (std::uint64_t r = 0; r < bw.repeat; r++)
                rates.push_back(bandwidth_of(mn.value, da, db, bw, size));
            ctx.add(case_name, mn.name, "mb_per_s", summarize(rates).median, "MB/s",
                    two(static_cast<std::int64_t>(size), bw.repeat));
        }
}

struct GapRun {
    double t_ns = 0;           // first post to the last RECV completion seen
    std::vector<double> os_ns; // each post's duration
};

// n 8-byte messages posted back to back into receives posted beforehand.
GapRun gap_once(Pair &p, std::uint64_t n) {
    const std::uint64_t s0 = p.a.sends, r0 = p.b.recvs;
    for (std::uint64_t i = 0; i < n; i++)
        p.b.post(p.b.recv(0, small_buf, i));
    p.barrier(p.b);
    GapRun g;
    g.os_ns.reserve(n);
    const std::uint64_t t0 = now_ns();
    for (std::uint64_t i = 0; i < n; i++) {
        const std::uint64_t a = now_ns();
        p.a.post(p.a_to_b(small_buf, small_msg, i));
        g.os_ns.push_back(static_cast<double>(now_ns() - a));
    }
    p.until([&] { return p.b.recvs - r0 == n; }, "gap", true);
    g.t_ns = static_cast<double>(p.b.last_recv_ns - t0);
    p.until([&] { return p.a.sends - s0 == n; }, "gap", true);
    p.b.recv_tags.clear();
    return g;
}

// Receive overhead: n completions already waiting, each taken and its
// buffer posted again.  Returns the durations in ns.
std::vector<double> recv_overhead(const Device &da, const Device &db, std::uint64_t n) {
    Pair p(da, db, 4096, 4096);
    for (std::uint64_t i = 0; i < n; i++)
        p.b.post(p.b.recv(0, small_buf, i));
    p.barrier(p.b);
    for (std::uint64_t i = 0; i < n; i++)
        p.a.post(p.a_to_b(small_buf, small_msg, i));
    // A send completes once its message is in the receiver's buffer and its
    // RECV completion posted: then all n are waiting on b.
    std::uint64_t last = now_ns();
    while (p.a.sends < n) {
        if (p.a.pump())
            last = now_ns();
        else if (now_ns() - last > stall_ns)
            fail(ETIMEDOUT, "receive overhead: no completion for 10 s");
    }
    std::vector<double> out;
    out.reserve(n);
    nicoff_cqe c{};
    for (std::uint64_t i = 0; i < n; i++) {
        const std::uint64_t t0 = now_ns();
        while (p.b.port.poll(std::span(&c, 1)) == 0)
            if (now_ns() - t0 > stall_ns)
                fail(ETIMEDOUT, "receive overhead: completion missing");
        if (c.opcode != NICOFF_OP_RECV || c.status != 0)
            fail(EPROTO, "receive overhead: unexpected completion");
        if (!p.b.port.try_post(p.b.recv(0, small_buf, c.tag)))
            fail(EAGAIN, "receive overhead: ring full");
        out.push_back(static_cast<double>(now_ns() - t0));
    }
    return out;
}

void run(Context &ctx) {
    const Options &o = ctx.opts();
    const std::uint64_t warmup = o.u64("warmup"), runs = o.u64("runs"), depth = o.u64("depth");
    const std::uint64_t bytes = o.u64("bytes"), repeat = o.u64("repeat");
    const std::uint64_t gap_msgs = o.u64("gap-msgs"), nop_runs = o.u64("nop-runs");
    const std::uint64_t drop_ppm = o.u64("drop-ppm");
    if (runs == 0 || depth == 0 || repeat == 0 || nop_runs == 0)
        throw std::invalid_argument("--runs, --nop-runs, --depth and --repeat must be at least 1");
    BandwidthRuns bw{o.u64_list("sizes"), depth, bytes, o.u64("max-msgs"), repeat, true};
    for (const std::uint64_t size : bw.sizes)
        if (size == 0 || size > max_size)
            throw std::invalid_argument("--sizes: " + std::to_string(size) + " is not in [1, " +
                                        std::to_string(max_size) + "]");
    if (drop_ppm > 1'000'000)
        throw std::invalid_argument("--drop-ppm must be at most 1000000");
    if (depth > ring / 2 || gap_msgs < 2 || gap_msgs > ring / 2)
        throw std::invalid_argument("--depth and --gap-msgs must be at most " +
                                    std::to_string(ring / 2) + ", --gap-msgs at least 2");
    const TwoCards cards(o);
    const Device &da = cards.a, &db = cards.b;
    // The last case changes a tunable: find out now, not after minutes of
    // measuring, that it cannot.
    const std::string drop_param = std::string(tunable_dir) + "/fault_drop_ppm";
    if (drop_ppm > 0 && ::access(drop_param.c_str(), W_OK) != 0)
        fail(errno, "bandwidth_drop needs to write " + drop_param +
                        " (run as root, or --drop-ppm 0 to leave the case out)");

    // The NOP round trip of the same boot, a tenth of the runs as warm-up.
    const NopRtt nop = nop_rtt(da, nop_runs / 10, nop_runs);
    const Fields nop_fields{.nodes = 1, .runs = static_cast<std::int64_t>(nop_runs)};
    ctx.add("nop", "batch1", "rtt_us", nop.us.mean, "us", nop_fields);
    ctx.add("nop", "batch1", "rtt_us_median", nop.us.median, "us", nop_fields);

    // Ping-pong.
    const Summary pp = summarize(pingpong(da, db, warmup, runs, wait_sleeps(o, "pp-wait")));
    ctx.add("pingpong", "send_recv", "latency_us", pp.mean, "us", two(small_msg, runs));
    ctx.add("pingpong", "send_recv", "latency_us_median", pp.median, "us", two(small_msg, runs));
    ctx.add("pingpong", "send_recv", "latency_us_p99", pp.p99, "us", two(small_msg, runs));

    // Bandwidth.
    bw.sleep = wait_sleeps(o, "bw-wait");
    constexpr std::array all = {Method::memcpy, Method::send_recv, Method::put, Method::get};
    bandwidth_case(ctx, "bandwidth", all, da, db, bw);

    // LogP.
    std::vector<double> os, t1, tn;
    {
        Pair p(da, db, 4096, 4096);
        gap_once(p, gap_msgs); // warm-up
        for (std::uint64_t r = 0; r < repeat * 3; r++) {
            for (int k = 0; k < 8; k++)
                t1.push_back(gap_once(p, 1).t_ns);
            GapRun g = gap_once(p, gap_msgs);
            tn.push_back(g.t_ns);
            os.insert(os.end(), g.os_ns.begin(), g.os_ns.end());
        }
    }
    std::vector<double> orr;
    for (std::uint64_t r = 0; r < repeat; r++) {
        const std::vector<double> v = recv_overhead(da, db, gap_msgs);
        orr.insert(orr.end(), v.begin(), v.end());
    }
    const double o_s = summarize(os).median / 1000.0;
    const double o_r = summarize(orr).median / 1000.0;
    const double g =
        (summarize(tn).median - summarize(t1).median) / static_cast<double>(gap_msgs - 1) / 1000.0;
    const double l = std::max(0.0, pp.median - o_s - o_r);
    ctx.add("logp", "send_recv", "L_us", l, "us", two(small_msg, runs));
    ctx.add("logp", "send_recv", "o_us", (o_s + o_r) / 2, "us", two(small_msg, os.size()));
    ctx.add("logp", "send_recv", "o_s_us", o_s, "us", two(small_msg, os.size()));
    ctx.add("logp", "send_recv", "o_r_us", o_r, "us", two(small_msg, orr.size()));
    ctx.add("logp", "send_recv", "g_us", g, "us", two(small_msg, tn.size()));

    // Bandwidth under packet loss, last: nothing else runs with it.
    if (drop_ppm > 0) {
        const TunableOverride drop("fault_drop_ppm", std::to_string(drop_ppm));
        constexpr std::array lossy = {Method::send_recv, Method::put, Method::get};
        bandwidth_case(ctx, "bandwidth_drop", lossy, da, db, bw);
    }
}

const SuiteRegistrar registrar{{
    "p2p",
    "messages between two cards: NOP round trip, ping-pong latency, bandwidth of send/recv, "
    "put and get against memcpy (also under packet loss), LogP parameters",
    {
        peer_option(),
        {"nop-runs", "measured NOP round trips (a tenth as many before, unmeasured)", "10000"},
        {"warmup", "ping-pong round trips before measuring", "200"},
        {"pp-wait", "ping-pong: wait for a completion spinning or sleeping in poll(2)", "spin"},
        {"runs", "measured ping-pong round trips", "2000"},
        {"depth", "bandwidth: messages in flight", "8"},
        {"bw-wait", "bandwidth: with nothing to do, sleep in poll(2) or spin", "sleep"},
        {"sizes", "bandwidth: message sizes in bytes, comma-separated",
         "8,64,512,4096,16384,65536,262144,1048576,4194304"},
        {"bytes", "bandwidth: bytes per run and size (at least 2 x depth messages)", "33554432"},
        {"max-msgs", "bandwidth: at most this many messages per run (keeps small sizes short)",
         "1024"},
        {"drop-ppm", "bandwidth_drop: fault_drop_ppm for the case (0: leave the case out)", "1000"},
        {"repeat", "bandwidth runs per size, and LogP rounds / 3 (medians are reported)", "3"},
        {"gap-msgs", "LogP: messages sent back to back to measure g", "256"},
    },
    run,
}};

} // namespace
} // namespace nicoff::bench
