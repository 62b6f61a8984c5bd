// The collective suites' ranks and one-process runs (see collective.hpp).
#include "collective.hpp"

#include <cerrno>
#include <cstdio>
#include <exception>
#include <span>
#include <stdexcept>
#include <thread>
#include <utility>

#include <sys/resource.h>
#include <unistd.h>

namespace nicoff::bench {

namespace {
constexpr std::uint32_t rank_port_base = 16;
constexpr std::uint64_t spread_stall_ns = 300'000'000'000;
} // namespace

void run_ranks(std::uint32_t n, RankFailure &failure, const std::string &run,
               const std::function<void(std::uint32_t)> &body) {
    Children ranks;
    for (std::uint32_t r = 0; r < n; r++)
        ranks.spawn([&, r] {
            try {
                body(r);
            } catch (const std::exception &e) {
                if (!failure.failed.exchange(1))
                    std::snprintf(failure.what, sizeof(failure.what), "rank %u: %s", r, e.what());
                return 1;
            }
            return 0;
        });
    if (ranks.reap() != Children::Outcome::ok)
        fail(EIO, run + ": " + (failure.failed.load() ? failure.what : "a rank died"));
}

Rank::Rank(std::uint32_t rank, std::uint32_t n, std::uint32_t cards, std::chrono::microseconds spin)
    : job(rank, n, cards, rank_port_base),
      port(job.open_port(PortConfig{NICOFF_PORT_ANY, 512, 512})), members(n) {
    for (std::uint32_t r = 0; r < n; r++)
        members[r] = nicoff_member{job.card_of(r), job.port_of(r)};
    gc.spin = spin;
    gc.timeout = std::chrono::seconds(120);
}

std::uint32_t group_id_base() { return static_cast<std::uint32_t>(::getpid()) << 12; }

OptionSpec spin_option() {
    return {"spin-us", "how long a waiting process polls before it sleeps", "0"};
}

OptionSpec cards_option() {
    return {"cards", "one-process runs: card counts, 'pow2' (2, 4, ... every card) or 'none'",
            "pow2"};
}

std::vector<std::uint32_t> card_counts(const Options &o, std::uint32_t cards) {
    std::vector<std::uint32_t> ns;
    if (o.str("cards") == "pow2") {
        for (std::uint32_t n = 2; n <= cards; n *= 2)
            ns.push_back(n);
        if (ns.empty() || ns.back() != cards)
            ns.push_back(cards);
        return ns;
    }
    if (o.str("cards") == "none")
        return ns;
    for (const std::uint64_t n : o.u64_list("cards")) {
        if (n < 1 || n > cards)
            throw std::invalid_argument("--cards: 1.." + std::to_string(cards));
        ns.push_back(static_cast<std::uint32_t>(n));
    }
    return ns;
}

CardSpread::CardSpread(std::uint32_t n, std::string what) : what_(std::move(what)) {
    // A file per card, and then some.
    rlimit rl{};
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < 2 * n + 64) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    ports_.reserve(n);
    for (std::uint32_t i = 0; i < n; i++) {
        ports_.emplace_back(i, PortConfig{NICOFF_PORT_ANY, 4, 4});
        members_.push_back(nicoff_member{i, ports_.back().number()});
    }
    // Registered once every member is in: the table does not move again.
    tables_.reserve(n);
    for (Port &p : ports_)
        tables_.emplace_back(p, std::as_writable_bytes(std::span<nicoff_member>(members_)), 0);
}

std::uint64_t CardSpread::all(nicoff_cmd cmd,
                              const std::function<void(std::size_t, nicoff_cmd &)> &fill) {
    const std::uint64_t t = tag_++;
    cmd.tag = t;
    for (std::size_t i = 0; i < ports_.size(); i++) {
        if (cmd.opcode == NICOFF_OP_GROUP_CREATE) {
            cmd.group.rank = static_cast<std::uint32_t>(i);
            cmd.group.mr = tables_[i].handle();
        }
        if (fill)
            fill(i, cmd);
        if (!ports_[i].try_post(cmd))
            fail(EAGAIN, what_ + ": ring full");
    }
    std::uint64_t result = 0;
    std::size_t left = ports_.size(), idle = 0;
    std::vector<char> got(ports_.size(), 0);
    const std::uint64_t start = now_ns();
    while (left) {
        bool any = false;
        for (std::size_t i = 0; i < ports_.size(); i++) {
            nicoff_cqe c;
            if (got[i] || ports_[i].poll(std::span<nicoff_cqe>(&c, 1)) != 1)
                continue;
            if (c.status)
                fail(-c.status, what_ + ": " + nicoff_opcode_name(c.opcode) + " failed");
            if (c.tag != t)
                fail(EPROTO, what_ + ": stray completion");
            if (i == 0)
                result = c.result;
            got[i] = 1;
            left--;
            any = true;
        }
        if (any) {
            idle = 0;
            continue;
        }
        // Leave the CPU to the card threads.
        if (++idle > 4)
            std::this_thread::yield();
        if (now_ns() - start > spread_stall_ns)
            fail(ETIMEDOUT, what_ + ": no completion for 300 s");
    }
    return result;
}

} // namespace nicoff::bench
