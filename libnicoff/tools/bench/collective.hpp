// What the collective suites (barrier, bcast) share: the ranks of a run,
// processes forked from the bench and placed as a job places them, and the
// one process that drives a port on each of N cards instead.
#ifndef NICOFF_BENCH_COLLECTIVE_HPP
#define NICOFF_BENCH_COLLECTIVE_HPP

#include "bench.hpp"

#include <nicoff/nicoff.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace nicoff::bench {

inline constexpr std::uint32_t max_ranks = 256;

// The first failure among the ranks of a run; it lives in the memory they
// share with the bench.
struct RankFailure {
    std::atomic<int> failed;
    char what[256];
};

// Forks ranks 0 .. n-1, each running body(rank), and waits for them all.
// The first rank to throw (its message kept in failure) or die ends the
// run, the others killed: they would wait for it.  Throws EIO then, with
// run ("bcast N=8") and the rank's message.
void run_ranks(std::uint32_t n, RankFailure &failure, const std::string &run,
               const std::function<void(std::uint32_t)> &body);

// One rank's port and its groups' members: rank r on card r % cards, port
// 16 + r / cards.  Its groups poll for spin before they sleep, and give up
// after 120 s: a rank that failed must not hang the others.
struct Rank {
    Rank(std::uint32_t rank, std::uint32_t n, std::uint32_t cards, std::chrono::microseconds spin);
    Job job;
    Port port;
    std::vector<nicoff_member> members;
    GroupConfig gc;
};

// The first group id of this process's runs: the pid keeps two benches on
// one machine apart, 4,096 ids each.
std::uint32_t group_id_base();

// --spin-us: how long a waiting process polls before it sleeps.
OptionSpec spin_option();
// --cards: the card counts of the one-process runs.
OptionSpec cards_option();
// Its counts: "pow2" is 2, 4, ... and every card; "none" none.  Throws
// std::invalid_argument for a count outside 1 .. cards.
std::vector<std::uint32_t> card_counts(const Options &o, std::uint32_t cards);

// One process holding a port on each of cards 0 .. n-1, rank i on card i,
// that plays every member of its groups: what a collective costs the cards
// without the scheduling of as many processes.
class CardSpread {
public:
    // what names the runs in errors ("one-process barrier").
    CardSpread(std::uint32_t n, std::string what);
    std::size_t size() const noexcept { return ports_.size(); }

    // Posts cmd on every port, then takes one completion from each; returns
    // the first port's result.  A GROUP_CREATE gets each port's rank and
    // member table; fill(i, cmd), if given, sets what else is port i's own.
    // Throws on a full ring, a failed command or 300 s without completion.
    std::uint64_t all(nicoff_cmd cmd,
                      const std::function<void(std::size_t, nicoff_cmd &)> &fill = {});

    Port &port(std::size_t i) { return ports_[i]; }

private:
    std::string what_;
    std::vector<Port> ports_;
    std::vector<nicoff_member> members_;
    std::vector<MemoryRegion> tables_;
    std::uint64_t tag_ = 1;
};

} // namespace nicoff::bench

#endif // NICOFF_BENCH_COLLECTIVE_HPP
