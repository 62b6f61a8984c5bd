// libarmci-nicoff: NICOFF_ARMCI_STRIDED and NICOFF_ARMCI_BOUNCE.
#include "config.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string>
#include <system_error>

namespace nicoff::armci {

namespace {

// What runs when the variable is unset: the strided engine's auto, the
// cheaper method per call by the card's cost models (issue 16).  It needs
// HBNA's targets: a thread and a port per allocation at every rank.
constexpr StridedMethod default_method = StridedMethod::automatic;

// Room for a 256 x 256 patch of doubles and for several smaller requests
// in flight; pinned twice with a strided engine (its port's registration).
constexpr std::uint64_t default_bounce = 1 << 20;
constexpr std::uint64_t max_bounce = 1 << 30;

} // namespace

StridedMethod strided_method(const char *value) {
    if (!value)
        return default_method;
    const auto m = parse_strided_method(value);
    if (!m)
        throw std::system_error(EINVAL, std::generic_category(),
                                std::string("NICOFF_ARMCI_STRIDED='") + value +
                                    "': expected nic, naive, hbna or auto");
    return *m;
}

std::uint64_t bounce_bytes(const char *value) {
    if (!value)
        return default_bounce;
    std::uint64_t n = 0;
    const char *end = value + std::strlen(value);
    const auto [ptr, ec] = std::from_chars(value, end, n);
    if (ec != std::errc() || ptr != end || ptr == value || n > max_bounce)
        throw std::system_error(EINVAL, std::generic_category(),
                                std::string("NICOFF_ARMCI_BOUNCE='") + value +
                                    "': expected a number of bytes from 0 to 1073741824");
    return n;
}

} // namespace nicoff::armci
