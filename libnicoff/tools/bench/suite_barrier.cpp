// Suite "barrier": barriers run by the cards (nicoff::Group, seed 000's
// NIC-based collective protocol) against the same algorithms run by the
// processes over SEND/RECV (nicoff::HostBarrier, the papers' host-based
// barriers), in one run.
//
//   <alg>/card, <alg>/host   latency_us: N processes (forked, rank r on
//                            card r % cards, port 16 + r / cards) run
//                            --warmup barriers, then the mean of --iters
//                            back-to-back barriers (seed 000, section 8:
//                            100 and 10,000), as rank 0 sees it; <alg> is
//                            pairwise, dissemination, tree, central,
//                            combining, tournament, and auto (card only).
//                            The card algorithms take turns: --rounds
//                            slices of iters / rounds barriers each, so
//                            that a stall of the VM's host, which lasts
//                            seconds, weighs on all of them alike
//   <alg>/host/card          ratio: host latency over card latency
//   central/shm              latency_us: the same processes with a futex-
//                            based shared-memory barrier (shmbarrier.hpp,
//                            a central sense-reversing counter: what a user
//                            of one machine would pick); --shm 0: not run
//   <alg>/card/shm           ratio: card latency over shm latency
//   auto/card                chosen: the algorithm auto picked (its number);
//                            --auto-trials card (the library's default)
//                            times the candidates on barriers the cards run
//                            by themselves, host on the processes' own
//                            barriers while the group is created
//   auto_pick/card           picks_best, picks_best_pct: with --auto-repeats
//                            K, K fresh auto groups (each created as a
//                            program would) and how many of their choices
//                            were the best card algorithm of this N's timed
//                            runs or within 10% of it (issue 18's goal);
//                            runs: K
//   auto_pick/<alg>          picks: how many of the K chose <alg>
//   <alg>/card               latency_us_1proc: one process holds a port on
//                            each of N cards (N up to every card of the
//                            module: 1,024 with nics=1024) and drives all
//                            members: the protocol's scaling without
//                            process scheduling; --cards-iters barriers or
//                            --cards-seconds, whichever ends first
//   dissemination/card       model_t_init_us, model_t_trig_us,
//                            model_t_adj_us, model_rms_us: seed 000's
//                            T = Tinit + (ceil(log2 N) - 1) Ttrig + Tadj
//                            fitted to the 1proc medians (Tinit: N = 2;
//                            medians, as stalls of the host of the VM
//                            weigh on means)
//
// tools/barrier_report.py adds the LogP predictions of seed 003 (from the
// p2p suite's L, o, g) and the simulator's for 4,096 and 1,048,576 nodes.
#include "bench.hpp"
#include "collective.hpp"
#include "shmbarrier.hpp"

#include <nicoff/nicoff.hpp>
#include <nicoff/prep.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace nicoff::bench {
namespace {

constexpr std::uint32_t ncard_algs = NICOFF_BARRIER_MAX; // auto + the six
constexpr std::uint32_t nhost_algs = NICOFF_BARRIER_MAX - 1;
constexpr std::uint32_t shm_config = ncard_algs + nhost_algs;
constexpr std::uint32_t nconfigs = shm_config + 1;
// Group ids of one N: card algorithms from 0, host ones' from 100, auto's
// repeated choices from 128 (ids of one N end at 256).
constexpr std::uint32_t auto_pick_gid = 128;
constexpr std::uint32_t max_auto_repeats = 128;
constexpr std::uint32_t max_rounds = 64;
// A choice within 10% of the best algorithm counts as the best (issue 18).
constexpr double pick_tolerance = 1.10;

std::vector<std::uint32_t> parse_algs(const Options &o, const std::string &name) {
    std::vector<std::uint32_t> v;
    for (const std::string &item : o.list(name)) {
        const auto a = barrier_algorithm_from_name(item);
        if (!a || *a >= NICOFF_BARRIER_MAX)
            throw std::invalid_argument("unknown barrier algorithm " + item);
        // Each algorithm's group, figures and run control are one per run.
        if (std::find(v.begin(), v.end(), *a) != v.end())
            throw std::invalid_argument("--" + name + ": " + item + " twice");
        v.push_back(*a);
    }
    return v;
}

// What the processes of one N share with the bench.
struct Shared {
    RankFailure failure;
    double lat_us[nconfigs];    // rank 0's mean barrier time; < 0: not run
    double median_us[nconfigs]; // and the median of its barriers
    double p99_us[nconfigs];
    std::uint32_t runs[nconfigs];
    std::uint64_t chosen;                  // auto's GROUP_CREATE result
    std::uint32_t picks[max_auto_repeats]; // the algorithms of --auto-repeats
    ShmBarrierState shm;
    // Run control, not a barrier: rank 0 ends a configuration's slice early
    // (time budget) by setting the last barrier to run.  No rank is ever
    // more than one barrier ahead of another, so stop = k + 1, written by
    // rank 0 after barrier k, is seen by every rank before it would start
    // k + 2.  One per slice (round, configuration): a rank may reach a
    // slice before rank 0 has left the one before.
    std::atomic<std::uint32_t> stop[max_rounds][nconfigs];
};

// lat_us[a]: card algorithm a (0: auto); lat_us[ncard_algs + a - 1]: host a;
// lat_us[shm_config]: the shared-memory barrier.

struct ProcParams {
    std::uint32_t n, cards, warmup, iters, auto_repeats, rounds;
    double seconds;
    std::chrono::microseconds spin;
    bool shm;
    bool host_trials; // --auto-trials host
    std::vector<std::uint32_t> card_algs, host_algs;
};

// One rank's work: every configuration in the same order as every rank.
void rank_main(Shared *sh, const ProcParams &pp, std::uint32_t rank, std::uint32_t gid_base) {
    Rank me(rank, pp.n, pp.cards, pp.spin);
    me.gc.host_trials = pp.host_trials;
    // Rank 0's record of each configuration, over its slices.
    std::vector<std::vector<double>> samples(nconfigs);
    std::vector<std::uint64_t> total_ns(nconfigs), done(nconfigs);
    // Slice @r of configuration @c: warmup, then at most its share of the
    // barriers and of the time budget.
    auto slice = [&](auto &&one, std::uint32_t c, std::uint32_t r, std::uint32_t rounds) {
        for (std::uint32_t i = 0; i < std::max(1u, pp.warmup / rounds); i++)
            one();
        std::atomic<std::uint32_t> &stop = sh->stop[r][c];
        const std::uint64_t t0 = now_ns();
        const auto budget = static_cast<std::uint64_t>(pp.seconds * 1e9 / rounds);
        std::uint32_t k = 1;
        for (; k <= stop.load(); k++) {
            const std::uint64_t a = now_ns();
            one();
            const std::uint64_t b = now_ns();
            if (rank == 0) {
                samples[c].push_back(static_cast<double>(b - a) / 1e3);
                if (b - t0 > budget && k < stop.load())
                    stop.store(k + 1);
            }
        }
        if (rank == 0) {
            total_ns[c] += now_ns() - t0;
            done[c] += k - 1;
        }
    };
    auto record = [&](std::uint32_t c) {
        if (rank != 0 || done[c] == 0)
            return;
        sh->lat_us[c] = static_cast<double>(total_ns[c]) / 1e3 / static_cast<double>(done[c]);
        const Summary sm = summarize(samples[c]);
        sh->median_us[c] = sm.median;
        sh->p99_us[c] = sm.p99;
        sh->runs[c] = static_cast<std::uint32_t>(done[c]);
    };
    {
        // Every card algorithm's group at once, so that they can take turns.
        std::vector<Group> groups;
        groups.reserve(pp.card_algs.size());
        for (const std::uint32_t a : pp.card_algs) {
            me.gc.algorithm = a;
            groups.emplace_back(me.port, me.members, rank, gid_base + a, me.gc);
            if (a == NICOFF_BARRIER_AUTO && rank == 0)
                sh->chosen = groups.back().algorithm() |
                             static_cast<std::uint64_t>(groups.back().param()) << 32;
        }
        // Each round starts one algorithm later: a place in the turn that
        // costs (auto, always last, measured 5 to 17% over its own choice's
        // group) falls on every algorithm alike.
        for (std::uint32_t r = 0; r < pp.rounds; r++)
            for (std::size_t j = 0; j < groups.size(); j++) {
                const std::size_t i = (j + r) % groups.size();
                slice([&] { groups[i].barrier(); }, pp.card_algs[i], r, pp.rounds);
            }
        for (std::size_t i = 0; i < groups.size(); i++) {
            record(pp.card_algs[i]);
            groups[i].destroy();
        }
    }
    auto timed = [&](auto &&one, std::uint32_t c) {
        slice(one, c, 0, 1);
        record(c);
    };
    // Auto's choice as a program sees it: a fresh group each time.
    const std::uint32_t alg = me.gc.algorithm;
    me.gc.algorithm = NICOFF_BARRIER_AUTO;
    for (std::uint32_t k = 0; k < pp.auto_repeats; k++) {
        Group g(me.port, me.members, rank, gid_base + auto_pick_gid + k, me.gc);
        if (rank == 0)
            sh->picks[k] = g.algorithm();
        g.destroy();
    }
    me.gc.algorithm = alg;
    for (const std::uint32_t a : pp.host_algs) {
        {
            HostBarrier hb(me.port, me.members, rank, a, 0, me.gc);
            timed([&] { hb.barrier(); }, ncard_algs + a - 1);
        }
        // The next configuration starts in step: one more card barrier.
        Group g(me.port, me.members, rank, gid_base + 100 + a, me.gc);
        g.destroy();
    }
    if (pp.shm) {
        ShmBarrier sb(sh->shm, pp.spin);
        timed([&] { sb.wait(); }, shm_config);
    }
}

// The lowest mean latency of the card algorithms other than auto; < 0: none.
double best_card_latency(const ProcParams &pp, const Shared &res) {
    double best = -1;
    for (const std::uint32_t a : pp.card_algs)
        if (a && res.lat_us[a] > 0 && (best < 0 || res.lat_us[a] < best))
            best = res.lat_us[a];
    return best;
}

// How many of auto's repeated choices were the best card algorithm of this
// N (within pick_tolerance), and how often it chose each.
void add_picks(Context &ctx, const ProcParams &pp, const Shared &res) {
    const double best = best_card_latency(pp, res);
    std::uint32_t hits = 0;
    std::uint32_t count[ncard_algs] = {};
    for (std::uint32_t k = 0; k < pp.auto_repeats; k++) {
        const std::uint32_t a = res.picks[k];
        if (a == 0 || a >= ncard_algs)
            continue;
        count[a]++;
        if (best > 0 && res.lat_us[a] > 0 && res.lat_us[a] <= best * pick_tolerance)
            hits++;
    }
    const Fields f{.nodes = pp.n, .runs = pp.auto_repeats};
    ctx.add("auto_pick", "card", "picks_best", hits, "runs", f);
    ctx.add("auto_pick", "card", "picks_best_pct", 100.0 * hits / pp.auto_repeats, "%", f);
    for (std::uint32_t a = 1; a < ncard_algs; a++)
        if (count[a])
            ctx.add("auto_pick", std::string(barrier_algorithm_name(a)), "picks", count[a], "runs",
                    f);
}

void run_procs(Context &ctx, const ProcParams &pp, std::uint32_t gid_base) {
    SharedMem<Shared> shm;
    Shared *sh = shm.get();
    std::fill(std::begin(sh->lat_us), std::end(sh->lat_us), -1.0);
    for (std::uint32_t r = 0; r < max_rounds; r++)
        for (std::uint32_t c = 0; c < nconfigs; c++)
            sh->stop[r][c].store(c < ncard_algs ? std::max(1u, pp.iters / pp.rounds) : pp.iters);
    sh->shm.init(pp.n);
    run_ranks(pp.n, sh->failure, "barrier N=" + std::to_string(pp.n),
              [&](std::uint32_t r) { rank_main(sh, pp, r, gid_base); });
    const Shared &res = *sh;

    auto add = [&](std::uint32_t a, const char *method, const char *metric, double v,
                   const char *unit, std::int64_t runs) {
        ctx.add(std::string(barrier_algorithm_name(a)), method, metric, v, unit,
                {.nodes = pp.n, .runs = runs});
    };
    auto add_config = [&](std::uint32_t a, std::uint32_t c, const char *method) {
        add(a, method, "latency_us", res.lat_us[c], "us", res.runs[c]);
        add(a, method, "latency_us_median", res.median_us[c], "us", res.runs[c]);
        add(a, method, "latency_us_p99", res.p99_us[c], "us", res.runs[c]);
    };
    for (const std::uint32_t a : pp.card_algs)
        add_config(a, a, "card");
    for (const std::uint32_t a : pp.host_algs)
        add_config(a, ncard_algs + a - 1, "host");
    if (pp.shm) {
        add_config(NICOFF_BARRIER_CENTRAL, shm_config, "shm");
        for (const std::uint32_t a : pp.card_algs) {
            add(a, "card/shm", "ratio", res.lat_us[a] / res.lat_us[shm_config], "x", res.runs[a]);
            add(a, "card/shm", "ratio_median", res.median_us[a] / res.median_us[shm_config], "x",
                res.runs[a]);
        }
    }
    for (const std::uint32_t a : pp.host_algs) {
        if (std::find(pp.card_algs.begin(), pp.card_algs.end(), a) == pp.card_algs.end())
            continue;
        const std::uint32_t h = ncard_algs + a - 1;
        add(a, "host/card", "ratio", res.lat_us[h] / res.lat_us[a], "x", res.runs[a]);
        add(a, "host/card", "ratio_median", res.median_us[h] / res.median_us[a], "x", res.runs[a]);
    }
    if (std::find(pp.card_algs.begin(), pp.card_algs.end(), 0u) != pp.card_algs.end()) {
        add(0, "card", "chosen", static_cast<double>(res.chosen & 0xffffffff), "alg", 1);
        const double best = best_card_latency(pp, res);
        if (best > 0)
            add(0, "card", "vs_best", res.lat_us[0] / best, "x", res.runs[0]);
    }
    if (pp.auto_repeats > 0)
        add_picks(ctx, pp, res);
}

// ------------------------------------------------- one process, N cards --

double one_process(Context &ctx, std::uint32_t n, std::uint32_t alg, std::uint32_t gid,
                   std::uint64_t iters, double seconds, std::uint64_t warmup) {
    CardSpread op(n, "one-process barrier");
    // all() fills in each port's rank and member table, and the tag.
    nicoff_cmd c;
    nicoff_prep_group_create(&c, gid, 0, n, 0, 0, alg, 0, 0);
    const std::uint64_t chosen = op.all(c);
    nicoff_cmd b;
    nicoff_prep_barrier(&b, gid, 0);
    for (std::uint64_t i = 0; i < warmup; i++)
        op.all(b);
    std::uint64_t done = 0;
    std::vector<double> samples;
    const std::uint64_t t0 = now_ns();
    const auto limit = static_cast<std::uint64_t>(seconds * 1e9);
    while (done < iters && (done < 10 || now_ns() - t0 < limit)) {
        const std::uint64_t a = now_ns();
        op.all(b);
        samples.push_back(static_cast<double>(now_ns() - a) / 1e3);
        done++;
    }
    const double us = static_cast<double>(now_ns() - t0) / 1e3 / static_cast<double>(done);
    nicoff_cmd d;
    nicoff_prep_group_destroy(&d, gid, 0);
    op.all(d);
    const std::string name(barrier_algorithm_name(alg));
    const Fields f{.nodes = n, .runs = static_cast<std::int64_t>(done)};
    ctx.add(name, "card", "latency_us_1proc", us, "us", f);
    ctx.add(name, "card", "latency_us_1proc_median", summarize(samples).median, "us", f);
    if (alg == NICOFF_BARRIER_AUTO)
        ctx.add("auto", "card", "chosen_1proc", static_cast<double>(chosen & 0xffffffff), "alg",
                {.nodes = n, .runs = 1});
    return summarize(samples).median;
}

// Seed 000's model fitted to (N, T): Tinit is T(2); Ttrig and Tinit + Tadj
// by least squares of T over x = ceil(log2 N) - 1.
void fit_model(Context &ctx, const std::vector<std::pair<std::uint32_t, double>> &pts) {
    double t2 = -1;
    for (const auto &[n, t] : pts)
        if (n == 2)
            t2 = t;
    std::vector<std::pair<double, double>> xy;
    for (const auto &[n, t] : pts) {
        if (n < 2)
            continue;
        double x = 0;
        while ((1ull << static_cast<int>(x)) < n)
            x++;
        xy.emplace_back(x - 1, t);
    }
    if (t2 < 0 || xy.size() < 2)
        return;
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto &[x, y] : xy) {
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    const double m = static_cast<double>(xy.size());
    const double den = m * sxx - sx * sx;
    if (den == 0)
        return;
    const double slope = (m * sxy - sx * sy) / den;
    const double icpt = (sy - slope * sx) / m;
    double rss = 0;
    for (const auto &[x, y] : xy)
        rss += (icpt + slope * x - y) * (icpt + slope * x - y);
    auto add = [&](const char *metric, double v) {
        ctx.add("dissemination", "card", metric, v, "us",
                {.runs = static_cast<std::int64_t>(xy.size())});
    };
    add("model_t_init_us", t2);
    add("model_t_trig_us", slope);
    add("model_t_adj_us", icpt - t2);
    add("model_rms_us", std::sqrt(rss / m));
}

void run(Context &ctx) {
    const auto &o = ctx.opts();
    ProcParams pp;
    pp.warmup = static_cast<std::uint32_t>(o.u64("warmup"));
    pp.iters = static_cast<std::uint32_t>(o.u64("iters"));
    pp.seconds = o.number("seconds");
    pp.spin = std::chrono::microseconds(o.u64("spin-us"));
    pp.card_algs = parse_algs(o, "card-algs");
    pp.host_algs = parse_algs(o, "host-algs");
    pp.shm = o.u64("shm") != 0;
    pp.auto_repeats = static_cast<std::uint32_t>(o.u64("auto-repeats"));
    pp.rounds = static_cast<std::uint32_t>(o.u64("rounds"));
    if (o.str("auto-trials") != "host" && o.str("auto-trials") != "card")
        throw std::invalid_argument("--auto-trials: host or card");
    pp.host_trials = o.str("auto-trials") == "host";
    if (pp.rounds < 1 || pp.rounds > max_rounds)
        throw std::invalid_argument("--rounds: 1.." + std::to_string(max_rounds));
    if (pp.auto_repeats > max_auto_repeats)
        throw std::invalid_argument("--auto-repeats: at most " + std::to_string(max_auto_repeats));
    for (std::uint32_t a = 1; pp.auto_repeats > 0 && a < ncard_algs; a++)
        if (std::find(pp.card_algs.begin(), pp.card_algs.end(), a) == pp.card_algs.end())
            throw std::invalid_argument("--auto-repeats: --card-algs must time every algorithm");
    if (std::find(pp.host_algs.begin(), pp.host_algs.end(), 0u) != pp.host_algs.end())
        throw std::invalid_argument("--host-algs: auto is the card's");
    if (pp.iters == 0)
        throw std::invalid_argument("--iters must be at least 1");
    const std::vector<std::uint32_t> algs = parse_algs(o, "cards-algs");
    // The arguments are checked before the device is needed.
    const Device dev(static_cast<unsigned>(o.u64("card")));
    const std::uint32_t cards = dev.info().num_cards;
    pp.cards = cards;
    const std::vector<std::uint32_t> ns = card_counts(o, cards);
    std::uint32_t gid = group_id_base();

    const std::vector<std::uint64_t> nodes =
        o.str("nodes") == "none" ? std::vector<std::uint64_t>{} : o.u64_list("nodes");
    for (const std::uint64_t n : nodes) {
        if (n < 1 || n > max_ranks)
            throw std::invalid_argument("--nodes: 1.." + std::to_string(max_ranks));
        pp.n = static_cast<std::uint32_t>(n);
        run_procs(ctx, pp, gid);
        gid += 256;
    }

    // One process, a port on each of N cards.
    std::vector<std::pair<std::uint32_t, double>> dis;
    for (const std::uint32_t n : ns) {
        for (const std::uint32_t a : algs) {
            const double us = one_process(ctx, n, a, gid++, o.u64("cards-iters"),
                                          o.number("cards-seconds"), o.u64("cards-warmup"));
            if (a == NICOFF_BARRIER_DISSEMINATION)
                dis.emplace_back(n, us);
        }
    }
    fit_model(ctx, dis);
}

const SuiteRegistrar reg{{
    "barrier",
    "barriers run by the cards vs the same algorithms run by the processes over SEND/RECV",
    {
        {"nodes", "process counts, comma-separated (rank r on card r % cards), or 'none'",
         "2,3,4,5,8"},
        {"warmup", "barriers before timing", "100"},
        {"iters", "barriers timed (their mean is reported)", "10000"},
        {"seconds", "time budget of one configuration: fewer barriers if it runs out", "5"},
        {"rounds", "card algorithms take turns in this many slices (iters and seconds shared out)",
         "10"},
        {"card-algs", "card algorithms (auto included)",
         "pairwise,dissemination,tree,central,combining,tournament,auto"},
        {"host-algs", "host algorithms",
         "pairwise,dissemination,tree,central,combining,tournament"},
        {"shm", "1: also time the futex-based shared-memory barrier (method shm)", "1"},
        {"auto-repeats",
         "fresh auto groups per N whose choice is judged against the timed algorithms "
         "(case auto_pick; at most 128)",
         "0"},
        {"auto-trials",
         "auto's candidates timed on the processes' barriers (host) or on the cards' own (card)",
         "card"},
        spin_option(),
        cards_option(),
        {"cards-algs", "one-process runs: algorithms", "dissemination,pairwise,auto"},
        {"cards-iters", "one-process runs: barriers timed at most", "2000"},
        {"cards-seconds", "one-process runs: seconds per run at most", "5"},
        {"cards-warmup", "one-process runs: barriers before timing", "20"},
    },
    run,
}};

} // namespace
} // namespace nicoff::bench
