// The NOP round trip through one port's rings, shared by the doorbell suite
// (where it is the main figure) and the p2p suite (its yardstick in the
// same VM boot).
#ifndef NICOFF_BENCH_NOP_HPP
#define NICOFF_BENCH_NOP_HPP

#include "bench.hpp"

#include <nicoff/nicoff.hpp>

#include <cstdint>

namespace nicoff::bench {

// Throws if the port went into the error state or nothing progressed for
// 10 s since last_progress_ns.
void check_progress(const Port &port, std::uint64_t last_progress_ns, const char *what);

// Throws unless c is the successful completion of the NOP tagged tag.
void check_nop(const nicoff_cqe &c, std::uint64_t tag);

struct NopRtt {
    Summary us;              // round trips in microseconds
    double kicks_per_op = 0; // KICK ioctls per measured round trip
};

// Posts one NOP on a fresh port of dev and spins until its completion is
// seen, warmup + runs times; the last runs are measured.  runs >= 1.
NopRtt nop_rtt(const Device &dev, std::uint64_t warmup, std::uint64_t runs);

} // namespace nicoff::bench

#endif // NICOFF_BENCH_NOP_HPP
