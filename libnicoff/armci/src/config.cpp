// libarmci-nicoff: NICOFF_ARMCI_STRIDED.
#include "config.hpp"

#include <cerrno>
#include <string>
#include <system_error>

namespace nicoff::armci {

namespace {

// What runs when the variable is unset: the strided engine's auto, the
// cheaper method per call by the card's cost models (issue 16).  It needs
// HBNA's targets: a thread and a port per allocation at every rank.
constexpr StridedMethod default_method = StridedMethod::automatic;

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

} // namespace nicoff::armci
