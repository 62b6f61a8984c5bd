// Suite "p2p": messages between two cards, one port on each, both driven by
// one thread of one process (it plays both ends, so neither end waits for a
// CPU the other one holds; the card threads have the rest).
//
//   pingpong/send_recv   latency_us: half round trip of an 8-byte message
//                        (send, receive, send back, receive, each receive
//                        posted again), the mean; latency_us_median,
//                        latency_us_p99
//   bandwidth/send_recv  mb_per_s (10^6 bytes/s) for 64 KiB .. 4 MiB
//                        messages, --depth of them in flight, each receive
//                        posted again as it completes
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
#include "bench.hpp"

#include <nicoff/nicoff.hpp>

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace nicoff::bench {
namespace {

constexpr std::uint64_t stall_ns = 10'000'000'000; // no progress for 10 s: give up
constexpr std::uint64_t small_msg = 8;
constexpr std::uint64_t small_buf = 64;
constexpr std::uint32_t ring = 1024;

// One end: a port, a registered buffer, and what its completions said.
struct End {
    End(const Device &dev, std::size_t bytes)
        : port(dev, PortConfig{NICOFF_PORT_ANY, ring, ring}), mem(bytes),
          mr(port, mem, NICOFF_ACCESS_LOCAL_WRITE), cqes(64) {}

    Port port;
    std::vector<std::byte> mem;
    MemoryRegion mr;
    std::vector<nicoff_cqe> cqes;
    std::uint64_t sends = 0, recvs = 0, nops = 0; // completions seen
    std::uint64_t last_recv_ns = 0;               // when the latest RECV completion was seen
    std::vector<std::uint64_t> recv_tags;         // RECV completions the caller has not handled

    void check(const nicoff_cqe &c) {
        if (c.status != 0)
            fail(-c.status, "opcode " + std::to_string(c.opcode) + " completed with status " +
                                std::to_string(c.status));
        if (c.opcode == NICOFF_OP_RECV) {
            recvs++;
            last_recv_ns = now_ns();
            recv_tags.push_back(c.tag);
        } else if (c.opcode == NICOFF_OP_SEND) {
            sends++;
        } else if (c.opcode == NICOFF_OP_NOP) {
            nops++;
        } else {
            fail(EPROTO, "unexpected completion, opcode " + std::to_string(c.opcode));
        }
    }

    // Takes every completion there is; false if there was none.
    bool pump() {
        const std::size_t n = port.poll(cqes);
        if (n == 0 && port.in_error())
            fail(EIO, "port went into the error state");
        for (std::size_t i = 0; i < n; i++)
            check(cqes[i]);
        return n != 0;
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
// one case is left for the next.
struct Pair {
    Pair(const Device &da, const Device &db, std::size_t bytes_a, std::size_t bytes_b)
        : a(da, bytes_a), b(db, bytes_b), card_a(da.info().card), card_b(db.info().card) {}
    End a, b;
    std::uint32_t card_a, card_b;

    nicoff_cmd a_to_b(std::uint64_t off, std::uint64_t len, std::uint64_t tag) const {
        return make_send(card_b, b.port.number(), a.mr.handle(), off, len, tag, tag);
    }
    nicoff_cmd b_to_a(std::uint64_t off, std::uint64_t len, std::uint64_t tag) const {
        return make_send(card_a, a.port.number(), b.mr.handle(), off, len, tag, tag);
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
                wait_any();
        }
    }

    // Sleeps in poll(2) until either end has a completion (or 10 ms pass).
    void wait_any() const {
        pollfd fds[2] = {{a.port.fd(), POLLIN, 0}, {b.port.fd(), POLLIN, 0}};
        if (::poll(fds, 2, 10) < 0 && errno != EINTR)
            fail(errno, "poll");
    }

    // The card takes commands in ring order: once a NOP posted after some
    // receives completes, those receives are in place.
    void barrier(End &e) {
        const std::uint64_t n = e.nops;
        e.post(make_nop(~0ull));
        until([&] { return e.nops > n; }, "barrier");
    }
};

Record make_record(Context &ctx, const char *case_name, const char *metric, double v,
                   const char *unit, std::int64_t bytes, std::uint64_t runs) {
    Record r = ctx.record(case_name, "send_recv", metric, v, unit);
    r.nodes = 2;
    r.bytes = bytes;
    r.runs = static_cast<std::int64_t>(runs);
    return r;
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
        bool pa = p.a.pump();
        bool pb = p.b.pump();
        if (!pa && !pb && sleep) {
            // Nothing to do until a card completes something: leave the CPU
            // to the card threads.
            p.wait_any();
            pa = p.a.pump();
            pb = p.b.pump();
        }
        // A buffer back in use as long as more messages are to come.
        for (const std::uint64_t slot : p.b.recv_tags)
            if (rposted < count) {
                p.b.post(p.b.recv(slot * size, size, slot));
                rposted++;
            }
        p.b.recv_tags.clear();
        if (pa || pb)
            last = now_ns();
        else if (now_ns() - last > stall_ns)
            fail(ETIMEDOUT, "bandwidth: no completion for 10 s");
    }
    const double secs = static_cast<double>(p.b.last_recv_ns - t0) / 1e9;
    p.until([&] { return p.a.sends == count; }, "bandwidth");
    return static_cast<double>(size * count) / secs / 1e6;
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
    const auto card = static_cast<unsigned>(o.u64("card"));
    const unsigned peer = o.str("peer").empty() ? card + 1 : static_cast<unsigned>(o.u64("peer"));
    const std::uint64_t warmup = o.u64("warmup"), runs = o.u64("runs"), depth = o.u64("depth");
    const std::uint64_t bytes = o.u64("bytes"), repeat = o.u64("repeat");
    const std::uint64_t gap_msgs = o.u64("gap-msgs");
    if (runs == 0 || depth == 0 || repeat == 0)
        throw std::invalid_argument("--runs, --depth and --repeat must be at least 1");
    if (depth > ring / 2 || gap_msgs < 2 || gap_msgs > ring / 2)
        throw std::invalid_argument("--depth and --gap-msgs must be at most " +
                                    std::to_string(ring / 2) + ", --gap-msgs at least 2");
    if (peer == card)
        throw std::invalid_argument("--peer must be another card than --card");
    const Device da(card), db(peer);
    if (peer >= da.info().num_cards)
        fail(ENODEV, "card " + std::to_string(peer) + " does not exist (" +
                         std::to_string(da.info().num_cards) + " cards)");

    auto wait_mode = [&](const char *name) {
        const std::string &w = o.str(name);
        if (w != "sleep" && w != "spin")
            throw std::invalid_argument(std::string("--") + name + " must be sleep or spin");
        return w == "sleep";
    };

    // Ping-pong.
    const Summary pp = summarize(pingpong(da, db, warmup, runs, wait_mode("pp-wait")));
    ctx.add(make_record(ctx, "pingpong", "latency_us", pp.mean, "us", small_msg, runs));
    ctx.add(make_record(ctx, "pingpong", "latency_us_median", pp.median, "us", small_msg, runs));
    ctx.add(make_record(ctx, "pingpong", "latency_us_p99", pp.p99, "us", small_msg, runs));

    // Bandwidth.
    const bool bw_sleep = wait_mode("bw-wait");
    for (std::uint64_t size = 64 << 10; size <= 4 << 20; size *= 4) {
        const std::uint64_t count = std::max(bytes / size, 2 * depth);
        std::vector<double> rates;
        for (std::uint64_t r = 0; r < repeat; r++)
            rates.push_back(bandwidth_once(da, db, size, depth, count, bw_sleep));
        ctx.add(make_record(ctx, "bandwidth", "mb_per_s", summarize(rates).median, "MB/s",
                            static_cast<std::int64_t>(size), repeat));
    }

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
    ctx.add(make_record(ctx, "logp", "L_us", l, "us", small_msg, runs));
    ctx.add(make_record(ctx, "logp", "o_us", (o_s + o_r) / 2, "us", small_msg, os.size()));
    ctx.add(make_record(ctx, "logp", "o_s_us", o_s, "us", small_msg, os.size()));
    ctx.add(make_record(ctx, "logp", "o_r_us", o_r, "us", small_msg, orr.size()));
    ctx.add(make_record(ctx, "logp", "g_us", g, "us", small_msg, tn.size()));
}

const SuiteRegistrar registrar{{
    "p2p",
    "messages between two cards: ping-pong latency, bandwidth, LogP parameters",
    {
        {"peer", "the other card (default: --card + 1)", ""},
        {"warmup", "ping-pong round trips before measuring", "200"},
        {"pp-wait", "ping-pong: wait for a completion spinning or sleeping in poll(2)", "spin"},
        {"runs", "measured ping-pong round trips", "2000"},
        {"depth", "bandwidth: messages in flight", "8"},
        {"bw-wait", "bandwidth: with nothing to do, sleep in poll(2) or spin", "sleep"},
        {"bytes", "bandwidth: bytes per run and size (at least 2 x depth messages)", "33554432"},
        {"repeat", "bandwidth runs per size, and LogP rounds / 3 (medians are reported)", "3"},
        {"gap-msgs", "LogP: messages sent back to back to measure g", "256"},
    },
    run,
}};

} // namespace
} // namespace nicoff::bench
