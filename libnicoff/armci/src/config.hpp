// libarmci-nicoff: the environment it reads (Documentation/armci.md).
#ifndef NICOFF_ARMCI_CONFIG_HPP
#define NICOFF_ARMCI_CONFIG_HPP

#include <nicoff/strided.hpp>

#include <cstdint>

namespace nicoff::armci {

// How strided transfers run (NICOFF_ARMCI_STRIDED): seed 004's methods, by
// the strided engine's names (nic, naive, hbna, auto).  Value null: unset,
// the default (auto); EINVAL naming the variable for an unknown word.
StridedMethod strided_method(const char *value);

// The bounce buffer's bytes (NICOFF_ARMCI_BOUNCE, a decimal number of
// bytes up to 1 GiB; 0: none, every foreign local buffer is registered).
// Value null: unset, the default (1 MiB); EINVAL naming the variable for
// anything else.
std::uint64_t bounce_bytes(const char *value);

// Whether m needs every allocation served by an HBNA target.
constexpr bool needs_targets(StridedMethod m) noexcept {
    return m == StridedMethod::hbna || m == StridedMethod::automatic;
}

} // namespace nicoff::armci

#endif
