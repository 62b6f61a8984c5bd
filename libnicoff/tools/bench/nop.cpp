// The NOP round trip (see nop.hpp).
#include "nop.hpp"

#include <cerrno>
#include <span>
#include <string>
#include <vector>

namespace nicoff::bench {

void check_progress(const Port &port, std::uint64_t last_progress_ns, const char *what) {
    if (port.in_error())
        fail(EIO, std::string(what) + ": port went into the error state");
    if (now_ns() - last_progress_ns > stall_ns)
        fail(ETIMEDOUT, std::string(what) + ": no completion for 10 s");
}

void check_nop(const nicoff_cqe &c, std::uint64_t tag) {
    if (c.status != 0)
        fail(-c.status, "NOP completed with status " + std::to_string(c.status));
    if (c.tag != tag)
        fail(EPROTO,
             "completion tag " + std::to_string(c.tag) + ", expected " + std::to_string(tag));
}

NopRtt nop_rtt(const Device &dev, std::uint64_t warmup, std::uint64_t runs) {
    Port port(dev, PortConfig{NICOFF_PORT_ANY, 64, 64});
    std::vector<double> samples;
    samples.reserve(runs);
    std::uint64_t kicks0 = 0;
    for (std::uint64_t i = 0; i < warmup + runs; i++) {
        if (i == warmup)
            kicks0 = port.kicks();
        nicoff_cqe cqe;
        const std::uint64_t t0 = now_ns();
        if (!port.try_post(make_nop(i)))
            fail(port.in_error() ? EIO : EAGAIN, "rtt: cannot post a NOP");
        std::uint64_t spins = 0;
        while (port.poll(std::span(&cqe, 1)) == 0)
            if ((++spins & 0xfffff) == 0)
                check_progress(port, t0, "rtt");
        const std::uint64_t t1 = now_ns();
        check_nop(cqe, i);
        if (i >= warmup)
            samples.push_back(static_cast<double>(t1 - t0) / 1000.0);
    }
    NopRtt r;
    r.kicks_per_op = static_cast<double>(port.kicks() - kicks0) / static_cast<double>(runs);
    r.us = summarize(std::move(samples));
    return r;
}

} // namespace nicoff::bench
