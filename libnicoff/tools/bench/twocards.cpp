// Two cards driven by one process (see twocards.hpp).
#include "twocards.hpp"

#include <cerrno>
#include <stdexcept>
#include <string>
#include <vector>

#include <poll.h>

namespace nicoff::bench {

OptionSpec peer_option() { return {"peer", "the other card (default: --card + 1)", ""}; }

namespace {

unsigned card_option(const Options &o) { return static_cast<unsigned>(o.u64("card")); }

unsigned peer_of(const Options &o) {
    const unsigned card = card_option(o);
    const unsigned peer = o.str("peer").empty() ? card + 1 : static_cast<unsigned>(o.u64("peer"));
    if (peer == card)
        throw std::invalid_argument("--peer must be another card than --card");
    return peer;
}

} // namespace

TwoCards::TwoCards(const Options &o) : a(card_option(o)), b(peer_of(o)) {
    const unsigned peer = peer_of(o);
    if (peer >= a.info().num_cards)
        fail(ENODEV, "card " + std::to_string(peer) + " does not exist (" +
                         std::to_string(a.info().num_cards) + " cards)");
}

std::span<const nicoff_cqe> take_completions(Port &port, std::span<nicoff_cqe> buf) {
    const std::size_t n = port.poll(buf);
    if (n == 0 && port.in_error())
        fail(EIO, "port went into the error state");
    for (const nicoff_cqe &c : buf.first(n))
        if (c.status != 0)
            fail(-c.status, "opcode " + std::to_string(c.opcode) + " completed with status " +
                                std::to_string(c.status));
    return buf.first(n);
}

void sleep_for_completion(std::initializer_list<const Port *> ports) {
    std::vector<pollfd> fds;
    for (const Port *p : ports)
        fds.push_back({p->fd(), POLLIN, 0});
    if (::poll(fds.data(), fds.size(), 10) < 0 && errno != EINTR)
        fail(errno, "poll");
}

bool wait_sleeps(const Options &o, const std::string &name) {
    const std::string &w = o.str(name);
    if (w != "sleep" && w != "spin")
        throw std::invalid_argument("--" + name + " must be sleep or spin");
    return w == "sleep";
}

} // namespace nicoff::bench
