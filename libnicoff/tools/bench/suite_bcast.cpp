// Suite "bcast": broadcasts run by the cards (nicoff::Group::broadcast,
// seed 002's NIC-based broadcast over the fabric's multicast and channels)
// against the host-based binomial tree over SEND/RECV (nicoff::HostBroadcast,
// the seed's "generic" LA-MPI algorithm), in one run.
//
// Method (seed 002, section 6): N processes (forked, rank r on card
// r % cards, port 16 + r / cards) run every configuration in the same
// order: --warmup (20) broadcasts, the last one's payload checked byte for
// byte on every member, then --samples (1) samples of --iters (1,000)
// back-to-back broadcasts, each after a barrier; fewer for large sizes:
// at most --sample-bytes (64 MiB) per sample, at least --min-iters (10).
// A sample's latency is the slowest member's time over the broadcasts;
// the figure is the median of the samples.  Root 0 unless rotating.
//
//   case bcast      method card, card-nocrc (group flag NICOFF_BCAST_F_NOCRC),
//                   card-p2p-tree (NICOFF_BCAST_F_P2P: the cards' binomial
//                   tree, no multicast), host (HostBroadcast)
//                   latency_us: --size-nodes (8) processes, --sizes 8 B to
//                     4 MiB; and 8 B over --nodes (2 to 64) processes
//                     (--nodes-methods: card, host)
//                   mb_per_s: bytes over latency, sizes >= --mbps-from (64 KiB)
//                   latency_us_rotating: the root moves to the next rank at
//                     every broadcast (--rotating-sizes, --size-nodes)
//                   latency_us_1proc: one process holds a port on each of N
//                     cards (2, 4, ... every card of the module: --cards) and
//                     drives every member, root 0, 8 B: the protocol without
//                     process scheduling (--cards-iters)
//   case channels   method card, 8 B over --channels-nodes (8) processes (one
//                   per card with 8 cards), field channels: --channels
//                   (2, 4, 8, 16, 32); latency_us; and latency_us_1proc (and
//                   _median): one process driving a port on each of as many
//                   cards
//   ratios          case bcast: host/card, card-p2p-tree/card, card/card-nocrc
//                   (metric ratio: the first's latency over the second's, at
//                   each nodes and bytes); case channels: channels2/channels16
//                   (metric ratio, and ratio_1proc for the one-process sweep)
//
// A configuration whose group fails on the cards (ECONNRESET, ETIMEDOUT) is
// left out with a note on stderr; the others still run.
//
// Defaults are the seed's counts; a VM run that must be short passes e.g.
// BENCH_ARGS="--iters 200 --samples 1".
#include "bench.hpp"
#include "collective.hpp"

#include <nicoff/nicoff.hpp>
#include <nicoff/prep.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <tuple>
#include <vector>

namespace nicoff::bench {
namespace {

constexpr std::uint32_t max_configs = 96;
constexpr std::uint32_t max_samples = 16;

// The methods and the group flags of the card ones.
struct MethodSpec {
    const char *name;
    bool host;
    std::uint32_t flags;
};
constexpr MethodSpec method_specs[] = {
    {"card", false, 0},
    {"card-nocrc", false, NICOFF_BCAST_F_NOCRC},
    {"card-p2p-tree", false, NICOFF_BCAST_F_P2P},
    {"host", true, 0},
};

const MethodSpec &method_spec(const std::string &name) {
    for (const MethodSpec &m : method_specs)
        if (name == m.name)
            return m;
    throw std::invalid_argument("unknown bcast method " + name);
}

// One configuration the ranks of a run measure, in the same order on all.
struct Config {
    std::string case_name; // "bcast" or "channels"
    std::string method;
    std::string metric; // latency_us or latency_us_rotating
    std::uint64_t bytes = 8;
    std::uint32_t channels = 0; // 0: the card's default
    bool rotating = false;
    std::uint64_t iters = 0;

    auto key() const { return std::tie(case_name, method, metric, bytes, channels); }
};

struct Shared {
    RankFailure failure;
    // The time of each rank's sample, in ns.
    std::uint64_t ns[max_configs][max_samples][max_ranks];
    // A configuration whose group failed (the errno a rank saw): left out.
    std::atomic<int> broken[max_configs];
    char why[max_configs][128];
};

struct ProcParams {
    std::uint32_t n = 0, cards = 0, warmup = 0, samples = 0;
    std::chrono::microseconds spin{0};
    std::vector<Config> configs;
};

// The byte of the checked broadcast at i (of configuration c).
std::byte pattern(std::size_t c, std::uint64_t i) {
    return static_cast<std::byte>((i * 131 + c * 7 + 1) & 0xff);
}

void rank_main(Shared *sh, const ProcParams &pp, std::uint32_t rank, std::uint32_t gid_base) {
    Rank me(rank, pp.n, pp.cards, pp.spin);
    Group sync(me.port, me.members, rank, gid_base, me.gc);
    std::uint64_t most = 64;
    for (const Config &c : pp.configs)
        most = std::max(most, c.bytes);
    std::vector<std::byte> buf(most);
    const MemoryRegion mr(me.port, buf, NICOFF_ACCESS_LOCAL_WRITE);

    for (std::size_t ci = 0; ci < pp.configs.size(); ci++) {
        const Config &c = pp.configs[ci];
        const MethodSpec &m = method_spec(c.method);
        std::optional<Group> g;
        std::optional<HostBroadcast> h;
        if (m.host) {
            h.emplace(me.port, me.members, rank, me.gc);
        } else {
            GroupConfig bc = me.gc;
            bc.bcast_flags = m.flags;
            bc.bcast_channels = c.channels;
            g.emplace(me.port, me.members, rank, gid_base + 1 + static_cast<std::uint32_t>(ci), bc);
        }
        auto root_of = [&](std::uint64_t i) {
            return c.rotating ? static_cast<std::uint32_t>(i % pp.n) : 0u;
        };
        // A group that fails (a member found dead, a lost synchronisation)
        // fails this configuration on every member, not the run: each goes
        // on to the same barriers and the next configuration.
        bool failed = false;
        auto one = [&](std::uint32_t root) {
            if (failed)
                return;
            try {
                if (g)
                    g->broadcast(mr, 0, c.bytes, root);
                else
                    h->broadcast(mr, 0, c.bytes, root);
            } catch (const std::system_error &e) {
                const int err = e.code().value();
                if (err != ECONNRESET && err != ETIMEDOUT && err != ECANCELED)
                    throw;
                failed = true;
                if (!sh->broken[ci].exchange(err))
                    std::snprintf(sh->why[ci], sizeof(sh->why[ci]), "rank %u: %s", rank, e.what());
            }
        };
        for (std::uint64_t i = 0; i < pp.warmup; i++) {
            const std::uint32_t root = root_of(i);
            if (i + 1 < pp.warmup || failed) {
                one(root);
                continue;
            }
            // The last one carries a pattern every member checks.
            const std::span<std::byte> data(buf.data(), c.bytes);
            std::fill(data.begin(), data.end(), rank == root ? pattern(ci, i) : std::byte{0});
            one(root);
            for (std::size_t b = 0; b < data.size() && !failed; b++)
                if (data[b] != pattern(ci, i))
                    fail(EIO, "bcast " + c.method + " " + std::to_string(c.bytes) +
                                  " B: wrong byte at " + std::to_string(b) + " on rank " +
                                  std::to_string(rank));
        }
        for (std::uint32_t s = 0; s < pp.samples; s++) {
            sync.barrier();
            const std::uint64_t t0 = now_ns();
            for (std::uint64_t i = 0; i < c.iters; i++)
                one(root_of(pp.warmup + i));
            sh->ns[ci][s][rank] = now_ns() - t0;
        }
        // A root's eager broadcasts complete once sent: its group must stay
        // until every member holds them (a destroyed member fails the rest).
        sync.barrier();
        if (g) {
            try {
                g->destroy();
            } catch (const std::system_error &) {
                if (!failed)
                    throw;
            }
        }
    }
    sync.destroy();
}

// Runs the configurations over n processes; the median over samples of the
// slowest rank's time per broadcast, in us, for each.
std::vector<double> run_procs(const ProcParams &pp, std::uint32_t gid_base) {
    if (pp.configs.size() > max_configs)
        throw std::invalid_argument("too many bcast configurations in one run");
    SharedMem<Shared> shm;
    Shared *sh = shm.get();
    run_ranks(pp.n, sh->failure, "bcast N=" + std::to_string(pp.n),
              [&](std::uint32_t r) { rank_main(sh, pp, r, gid_base); });
    std::vector<double> us;
    for (std::size_t ci = 0; ci < pp.configs.size(); ci++) {
        if (sh->broken[ci].load()) {
            const Config &c = pp.configs[ci];
            std::fprintf(stderr,
                         "nicoff-bench: bcast N=%u %s %s %s %llu B channels %u left out: %s\n",
                         pp.n, c.case_name.c_str(), c.method.c_str(), c.metric.c_str(),
                         static_cast<unsigned long long>(c.bytes), c.channels, sh->why[ci]);
            us.push_back(-1);
            continue;
        }
        std::vector<double> v;
        for (std::uint32_t s = 0; s < pp.samples; s++) {
            std::uint64_t worst = 0;
            for (std::uint32_t r = 0; r < pp.n; r++)
                worst = std::max(worst, sh->ns[ci][s][r]);
            v.push_back(static_cast<double>(worst) / 1e3 /
                        static_cast<double>(pp.configs[ci].iters));
        }
        us.push_back(summarize(v).median);
    }
    return us;
}

// ------------------------------------------------- one process, N cards --

// The mean; records latency_us_1proc (and _median) in case bcast, or in
// case channels with its channels field when channels is not 0.
double one_process(Context &ctx, std::uint32_t n, const MethodSpec &m, std::uint32_t gid,
                   std::uint64_t iters, std::uint64_t warmup, std::uint32_t channels = 0) {
    CardSpread op(n, "one-process bcast");
    // Each port's broadcast lands in a buffer of its own.
    std::vector<std::vector<std::byte>> data(n, std::vector<std::byte>(64));
    std::vector<MemoryRegion> data_mrs;
    data_mrs.reserve(n);
    for (std::uint32_t i = 0; i < n; i++)
        data_mrs.emplace_back(op.port(i), data[i], NICOFF_ACCESS_LOCAL_WRITE);
    auto all = [&](nicoff_cmd cmd) {
        op.all(cmd, [&](std::size_t i, nicoff_cmd &x) {
            if (x.opcode == NICOFF_OP_BCAST)
                x.bcast.mr = data_mrs[i].handle();
        });
    };
    nicoff_cmd c;
    nicoff_prep_group_create_bcast(&c, gid, 0, n, 0, 0, NICOFF_BARRIER_DEFAULT, 0, channels,
                                   m.flags, 0);
    all(c);
    nicoff_cmd b;
    nicoff_prep_bcast(&b, gid, 0, 0, 0, 8, 0);
    for (std::uint64_t i = 0; i < warmup; i++)
        all(b);
    std::vector<double> samples;
    const std::uint64_t t0 = now_ns();
    for (std::uint64_t i = 0; i < iters; i++) {
        const std::uint64_t a = now_ns();
        all(b);
        samples.push_back(static_cast<double>(now_ns() - a) / 1e3);
    }
    const double us = static_cast<double>(now_ns() - t0) / 1e3 / static_cast<double>(iters);
    nicoff_cmd d;
    nicoff_prep_group_destroy(&d, gid, 0);
    all(d);
    Fields f{.nodes = n, .bytes = 8, .runs = static_cast<std::int64_t>(iters)};
    if (channels)
        f.channels = channels;
    const char *case_name = channels ? "channels" : "bcast";
    ctx.add(case_name, m.name, "latency_us_1proc", us, "us", f);
    ctx.add(case_name, m.name, "latency_us_1proc_median", summarize(samples).median, "us", f);
    return us;
}

// ------------------------------------------------------------------ run --

struct Result {
    Config c;
    std::uint32_t nodes;
    double us;
};

void emit(Context &ctx, const std::vector<Result> &res, std::uint32_t samples,
          std::uint64_t mbps_from) {
    for (const Result &x : res) {
        if (x.us < 0)
            continue; // its group failed (said on stderr)
        Fields f{.nodes = x.nodes,
                 .bytes = static_cast<std::int64_t>(x.c.bytes),
                 .runs = static_cast<std::int64_t>(x.c.iters * samples)};
        if (x.c.channels)
            f.channels = x.c.channels;
        const Record r = ctx.record(x.c.case_name, x.c.method, x.c.metric, x.us, "us", f);
        ctx.add(r);
        if (x.c.metric == "latency_us" && x.c.bytes >= mbps_from && x.us > 0) {
            Record t = r;
            t.metric = "mb_per_s";
            t.value = static_cast<double>(x.c.bytes) / x.us; // bytes per us = 10^6 B/s
            t.unit = "MB/s";
            ctx.add(t);
        }
    }
    // Ratios: a over b at each (case, metric, nodes, bytes) both measured.
    auto find = [&](const std::string &cs, const std::string &method, const std::string &metric,
                    std::uint32_t nodes, std::uint64_t bytes, std::uint32_t channels) {
        for (const Result &x : res)
            if (x.c.case_name == cs && x.c.method == method && x.c.metric == metric &&
                x.nodes == nodes && x.c.bytes == bytes && x.c.channels == channels && x.us > 0)
                return std::optional<double>(x.us);
        return std::optional<double>();
    };
    const std::pair<const char *, const char *> pairs[] = {
        {"host", "card"}, {"card-p2p-tree", "card"}, {"card", "card-nocrc"}};
    for (const Result &x : res) {
        if (x.c.case_name != "bcast" || x.c.method != "card")
            continue;
        for (const auto &[a, b] : pairs) {
            const auto va = find("bcast", a, x.c.metric, x.nodes, x.c.bytes, 0);
            const auto vb = find("bcast", b, x.c.metric, x.nodes, x.c.bytes, 0);
            if (!va || !vb || *vb <= 0)
                continue;
            ctx.add("bcast", std::string(a) + "/" + b, "ratio", *va / *vb, "x",
                    {.nodes = x.nodes, .bytes = static_cast<std::int64_t>(x.c.bytes)});
        }
    }
    for (const Result &x : res) {
        if (x.c.case_name != "channels" || x.c.channels != 16)
            continue;
        const auto v2 = find("channels", "card", "latency_us", x.nodes, x.c.bytes, 2);
        if (!v2 || x.us <= 0)
            continue;
        ctx.add("channels", "channels2/channels16", "ratio", *v2 / x.us, "x",
                {.nodes = x.nodes, .bytes = static_cast<std::int64_t>(x.c.bytes)});
    }
}

void run(Context &ctx) {
    const auto &o = ctx.opts();
    const Device dev(static_cast<unsigned>(o.u64("card")));
    const std::uint32_t cards = dev.info().num_cards;
    const std::uint64_t iters = o.u64("iters"), min_iters = o.u64("min-iters");
    const std::uint64_t sample_bytes = o.u64("sample-bytes");
    const auto samples = static_cast<std::uint32_t>(o.u64("samples"));
    if (iters == 0 || min_iters == 0)
        throw std::invalid_argument("--iters and --min-iters must be at least 1");
    if (samples == 0 || samples > max_samples)
        throw std::invalid_argument("--samples: 1.." + std::to_string(max_samples));
    auto iters_for = [&](std::uint64_t bytes) {
        if (!bytes)
            return iters;
        return std::min(iters, std::max(min_iters, sample_bytes / bytes));
    };
    auto nodes_ok = [&](std::uint64_t n, const char *opt) {
        if (n < 1 || n > max_ranks)
            throw std::invalid_argument(std::string("--") + opt + ": 1.." +
                                        std::to_string(max_ranks));
        return static_cast<std::uint32_t>(n);
    };
    auto methods = [&](const char *opt) {
        const std::vector<std::string> v = o.list(opt);
        for (const std::string &m : v)
            method_spec(m); // refuses unknown ones before anything runs
        return v;
    };

    // Every run's configurations, by process count, without duplicates.
    std::map<std::uint32_t, std::vector<Config>> runs;
    auto add = [&](std::uint32_t n, Config c) {
        c.iters = iters_for(c.bytes);
        auto &v = runs[n];
        if (std::none_of(v.begin(), v.end(), [&](const Config &x) { return x.key() == c.key(); }))
            v.push_back(c);
    };
    const std::uint32_t size_nodes = nodes_ok(o.u64("size-nodes"), "size-nodes");
    for (const std::string &m : methods("methods"))
        for (const std::uint64_t b : o.u64_list("sizes"))
            add(size_nodes, {"bcast", m, "latency_us", b});
    for (const std::uint64_t n : o.u64_list("nodes"))
        for (const std::string &m : methods("nodes-methods"))
            add(nodes_ok(n, "nodes"), {"bcast", m, "latency_us", 8});
    const std::uint32_t ch_nodes = nodes_ok(o.u64("channels-nodes"), "channels-nodes");
    for (const std::uint64_t ch :
         o.str("channels") == "none" ? std::vector<std::uint64_t>{} : o.u64_list("channels")) {
        if (ch < NICOFF_BCAST_MIN_CHANNELS || ch > NICOFF_BCAST_MAX_CHANNELS)
            throw std::invalid_argument("--channels: 2..64");
        add(ch_nodes, {"channels", "card", "latency_us", 8, static_cast<std::uint32_t>(ch)});
    }
    if (o.str("rotating-sizes") != "none")
        for (const std::string &m : methods("rotating-methods"))
            for (const std::uint64_t b : o.u64_list("rotating-sizes"))
                add(size_nodes, {"bcast", m, "latency_us_rotating", b, 0, true});

    const std::vector<std::uint32_t> ns = card_counts(o, cards);
    const std::vector<std::string> cm =
        ns.empty() ? std::vector<std::string>{} : methods("cards-methods");

    ProcParams pp;
    pp.cards = cards;
    pp.warmup = static_cast<std::uint32_t>(std::max<std::uint64_t>(1, o.u64("warmup")));
    pp.samples = samples;
    pp.spin = std::chrono::microseconds(o.u64("spin-us"));
    std::uint32_t gid = group_id_base();
    std::vector<Result> res;
    for (const auto &[n, configs] : runs) {
        pp.n = n;
        pp.configs = configs;
        const std::vector<double> us = run_procs(pp, gid);
        gid += 128;
        for (std::size_t i = 0; i < configs.size(); i++)
            res.push_back({configs[i], n, us[i]});
    }
    emit(ctx, res, samples, o.u64("mbps-from"));

    // One process, a port on each of N cards.
    for (const std::uint32_t n : ns) {
        for (const std::string &m : cm) {
            if (method_spec(m).host)
                throw std::invalid_argument("--cards-methods: card methods only");
            one_process(ctx, n, method_spec(m), gid++,
                        std::max<std::uint64_t>(1, o.u64("cards-iters")), o.u64("warmup"));
        }
    }

    // The channel sweep again with one process driving a port on each of
    // --channels-nodes cards: the synchronisation's cost without the
    // scheduling of as many processes as cards on few vCPUs.
    if (o.str("channels") == "none" || ch_nodes > cards)
        return;
    std::map<std::uint64_t, double> by_ch;
    for (const std::uint64_t ch : o.u64_list("channels"))
        by_ch[ch] = one_process(ctx, ch_nodes, method_spec("card"), gid++,
                                std::max<std::uint64_t>(1, o.u64("cards-iters")), o.u64("warmup"),
                                static_cast<std::uint32_t>(ch));
    if (by_ch.count(2) && by_ch.count(16) && by_ch[16] > 0) {
        ctx.add("channels", "channels2/channels16", "ratio_1proc", by_ch[2] / by_ch[16], "x",
                {.nodes = ch_nodes, .bytes = 8});
    }
}

const SuiteRegistrar reg{{
    "bcast",
    "broadcasts run by the cards (multicast, channels) vs a binomial tree run by the processes",
    {
        {"methods", "size sweep: card, card-nocrc, card-p2p-tree, host",
         "card,card-nocrc,card-p2p-tree,host"},
        {"sizes", "size sweep: bytes, comma-separated",
         "8,64,512,4096,16384,65536,262144,1048576,4194304"},
        {"size-nodes", "processes of the size sweep and the rotating runs", "8"},
        {"nodes", "8 B sweep: process counts (rank r on card r % cards)", "2,4,8,16,32,64"},
        {"nodes-methods", "8 B sweep: methods", "card,host"},
        {"channels", "channel sweep: channels per group (8 B), or 'none'", "2,4,8,16,32"},
        {"channels-nodes", "channel sweep: processes", "8"},
        {"rotating-sizes", "rotating roots: bytes, or 'none'", "8,65536"},
        {"rotating-methods", "rotating roots: methods", "card,host"},
        {"warmup", "broadcasts before timing (the last one checked)", "20"},
        {"iters", "broadcasts per sample", "1000"},
        {"min-iters", "broadcasts per sample at least, whatever the size", "10"},
        {"sample-bytes", "bytes per sample at most (fewer broadcasts of large sizes)", "67108864"},
        {"samples", "samples per configuration, each after a barrier (median reported)", "1"},
        {"mbps-from", "sizes from which mb_per_s is reported", "65536"},
        spin_option(),
        cards_option(),
        {"cards-methods", "one-process runs: card methods", "card,card-p2p-tree"},
        {"cards-iters", "one-process runs: broadcasts timed", "1000"},
    },
    run,
}};

} // namespace
} // namespace nicoff::bench
