// Suite "doorbell": what posting costs on one card.
//
//   nop/batch1   rtt_us, rtt_us_median, rtt_us_p99, rtt_kicks_per_op
//                post one NOP, spin until its completion is seen
//   nop/batchB   ops_per_s, kicks_per_op (B = 1 and 32)
//                keep the rings full of NOPs, posted B at a time
//   idle         idle_cpu_pct: CPU time of the card threads (kernel threads
//                named nicoff/*) while an open port sits idle, in percent of
//                one CPU, summed over the threads
#include "bench.hpp"
#include "nop.hpp"
#include "procstat.hpp"

#include <nicoff/nicoff.hpp>

#include <cerrno>
#include <cstdio>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <vector>

namespace nicoff::bench {
namespace {

void rtt(Context &ctx, const Device &dev) {
    const std::uint64_t runs = ctx.opts().u64("runs");
    if (runs == 0)
        throw std::invalid_argument("--runs must be at least 1");
    const NopRtt rtt = nop_rtt(dev, ctx.opts().u64("warmup"), runs);
    auto add = [&](const char *metric, double v, const char *unit) {
        ctx.add("nop", "batch1", metric, v, unit,
                {.nodes = 1, .runs = static_cast<std::int64_t>(runs)});
    };
    add("rtt_us", rtt.us.mean, "us");
    add("rtt_us_median", rtt.us.median, "us");
    add("rtt_us_p99", rtt.us.p99, "us");
    add("rtt_kicks_per_op", rtt.kicks_per_op, "kicks/op");
}

struct ThroughputRun {
    double seconds = 0;
    std::uint64_t kicks = 0;
    std::uint64_t kernel_kicks = 0;
};

// Keeps the rings full: posts `batch` NOPs at a time whenever that many
// slots are free, drains completions in between.
ThroughputRun throughput_once(Port &port, std::uint32_t batch, std::uint64_t ops) {
    std::vector<nicoff_cmd> cmds(batch);
    std::vector<nicoff_cqe> cqes(port.cq_entries());
    const std::uint64_t kicks0 = port.kicks();
    const std::uint64_t kernel0 = port.stats().kicks;
    std::uint64_t posted = 0, done = 0, last_progress = now_ns();
    const std::uint64_t t0 = now_ns();
    while (done < ops) {
        bool progress = false;
        if (posted < ops) {
            const auto n = static_cast<std::uint32_t>(std::min<std::uint64_t>(batch, ops - posted));
            if (n == 1) {
                if (port.try_post(make_nop(posted))) {
                    posted++;
                    progress = true;
                }
            } else if (port.free_slots() >= n) {
                for (std::uint32_t i = 0; i < n; i++)
                    cmds[i] = make_nop(posted + i);
                const std::size_t k = port.try_post_batch(std::span(cmds.data(), n));
                posted += k;
                progress = k != 0;
            }
        }
        const std::size_t got = port.poll(cqes);
        for (std::size_t i = 0; i < got; i++)
            check_nop(cqes[i], done + i);
        done += got;
        if (progress || got) {
            last_progress = now_ns();
        } else {
            check_progress(port, last_progress, "throughput");
        }
    }
    const std::uint64_t t1 = now_ns();
    ThroughputRun r;
    r.seconds = static_cast<double>(t1 - t0) / 1e9;
    r.kicks = port.kicks() - kicks0;
    r.kernel_kicks = port.stats().kicks - kernel0;
    return r;
}

void throughput(Context &ctx, const Device &dev, std::uint32_t batch) {
    const std::uint64_t ops = ctx.opts().u64("ops");
    const std::uint64_t repeat = ctx.opts().u64("repeat");
    const std::uint64_t ring = ctx.opts().u64("ring");
    if (ops == 0 || repeat == 0)
        throw std::invalid_argument("--ops and --repeat must be at least 1");
    if (ring < 32 || ring > (1u << 20) || (ring & (ring - 1)) != 0)
        throw std::invalid_argument("--ring must be a power of two in [32, 2^20]");
    Port port(dev, PortConfig{NICOFF_PORT_ANY, static_cast<std::uint32_t>(ring),
                              static_cast<std::uint32_t>(ring)});
    throughput_once(port, batch, std::max<std::uint64_t>(ops / 10, 1)); // warm-up

    std::vector<double> rates;
    std::uint64_t kicks = 0, kernel_kicks = 0;
    for (std::uint64_t i = 0; i < repeat; i++) {
        const ThroughputRun r = throughput_once(port, batch, ops);
        rates.push_back(static_cast<double>(ops) / r.seconds);
        kicks += r.kicks;
        kernel_kicks += r.kernel_kicks;
    }
    if (kicks != kernel_kicks)
        std::fprintf(stderr, "nicoff-bench: note: %llu kicks made, the kernel counted %llu\n",
                     static_cast<unsigned long long>(kicks),
                     static_cast<unsigned long long>(kernel_kicks));
    const std::string method = "batch" + std::to_string(batch);
    const Fields f{.nodes = 1, .runs = static_cast<std::int64_t>(repeat)};
    ctx.add("nop", method, "ops_per_s", summarize(rates).median, "ops/s", f);
    ctx.add("nop", method, "kicks_per_op",
            static_cast<double>(kicks) / static_cast<double>(ops * repeat), "kicks/op", f);
}

void idle(Context &ctx, const Device &dev) {
    const double seconds = ctx.opts().number("idle-seconds");
    // An open port that did some work and then sits idle: the card thread
    // should go to sleep instead of polling for ever.
    Port port(dev, PortConfig{NICOFF_PORT_ANY, 64, 64});
    for (std::uint64_t i = 0; i < 16; i++) {
        port.nop(i);
        if (!port.wait(std::chrono::milliseconds(10000)))
            fail(ETIMEDOUT, "idle: NOP not completed");
        nicoff_cqe cqe;
        while (port.poll(std::span(&cqe, 1)) == 0) {
        }
    }
    const std::vector<TaskCpu> before = kernel_threads_cpu("nicoff");
    if (before.empty())
        fail(ESRCH, "idle: no kernel thread named nicoff* in /proc");
    const std::uint64_t t0 = now_ns();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    const std::vector<TaskCpu> after = kernel_threads_cpu("nicoff");
    const double elapsed = static_cast<double>(now_ns() - t0) / 1e9;

    std::uint64_t ticks = 0;
    std::string names;
    for (const TaskCpu &a : after)
        for (const TaskCpu &b : before)
            if (a.pid == b.pid) {
                ticks += a.ticks - b.ticks;
                names += (names.empty() ? "" : " ") + a.comm;
            }
    const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
    std::fprintf(stderr, "  card threads: %s\n", names.c_str());
    ctx.add("idle", std::nullopt, "idle_cpu_pct", 100.0 * static_cast<double>(ticks) / hz / elapsed,
            "%", {.nodes = 1, .runs = 1});
}

void run(Context &ctx) {
    const std::uint64_t card = ctx.opts().u64("card");
    Device dev(static_cast<unsigned>(card));
    rtt(ctx, dev);
    throughput(ctx, dev, 1);
    throughput(ctx, dev, 32);
    if (ctx.opts().number("idle-seconds") > 0)
        idle(ctx, dev);
}

const SuiteRegistrar registrar{{
    "doorbell",
    "NOP round trip, posting throughput (batches of 1 and 32), idle card CPU",
    {
        {"warmup", "round trips before measuring", "1000"},
        {"runs", "measured round trips", "10000"},
        {"ops", "NOPs per throughput run", "200000"},
        {"repeat", "throughput runs (the median is reported)", "3"},
        {"ring", "ring entries for the throughput runs (power of two)", "256"},
        {"idle-seconds", "length of the idle CPU measurement (0: skip)", "10"},
    },
    run,
}};

} // namespace
} // namespace nicoff::bench
