// What the suites that drive two cards from one process (p2p, strided)
// share: the --peer option and the two devices, taking completions and
// sleeping until there are some (or spinning: their sleep-or-spin options).
#ifndef NICOFF_BENCH_TWOCARDS_HPP
#define NICOFF_BENCH_TWOCARDS_HPP

#include "bench.hpp"

#include <nicoff/nicoff.hpp>

#include <initializer_list>
#include <span>
#include <string>

namespace nicoff::bench {

// --peer: the other card (default: --card + 1).
OptionSpec peer_option();

// The cards --card and --peer; std::invalid_argument if they are the same,
// ENODEV if the peer does not exist.
struct TwoCards {
    explicit TwoCards(const Options &o);
    Device a, b;
};

// The completions there are on port, taken into buf: every one successful
// (throws with the errno of one that failed, or EIO once the port went
// into the error state).
std::span<const nicoff_cqe> take_completions(Port &port, std::span<nicoff_cqe> buf);

// Sleeps in poll(2) until one of ports has a completion (or 10 ms pass): on
// two vCPUs a spinning process takes the CPU the card threads need.
void sleep_for_completion(std::initializer_list<const Port *> ports);

// A sleep-or-spin option's value (such as --wait): true for sleep (in
// sleep_for_completion), false for spin; std::invalid_argument otherwise.
bool wait_sleeps(const Options &o, const std::string &name);

} // namespace nicoff::bench

#endif // NICOFF_BENCH_TWOCARDS_HPP
