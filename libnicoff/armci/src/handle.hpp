// libarmci-nicoff: what an armci_hdl_t holds here.  ARMCI-MPI's handle has
// two ints: target (the process, or any_target once requests to several
// were posted on it; -1 after ARMCI_INIT_HANDLE) and aggregate, which holds
// the low 31 bits of the last request id posted on it (0: none).  A wait
// covers every request to the target posted no later.  No MPI here, so
// that the host unit tests cover it.
#ifndef NICOFF_ARMCI_HANDLE_HPP
#define NICOFF_ARMCI_HANDLE_HPP

#include <cstdint>

namespace nicoff::armci {

inline constexpr std::uint32_t handle_id_mask = 0x7fffffff;
inline constexpr int any_target = -2;

// The id a handle keeps of request id (never 0 for the ids State hands out).
constexpr int handle_id(std::uint64_t id) noexcept { return static_cast<int>(id & handle_id_mask); }

// Whether request id was started no later than the handle's id hid,
// modulo the wrap of 31 bits (ids more than 2^30 apart compare wrongly).
constexpr bool not_after(std::uint64_t id, std::uint32_t hid) noexcept {
    return ((hid - static_cast<std::uint32_t>(id)) & handle_id_mask) < (1u << 30);
}

// Whether a handle (its target and id) covers request id to proc.
constexpr bool covers(int target, std::uint32_t hid, std::uint32_t proc,
                      std::uint64_t id) noexcept {
    return (target == any_target || static_cast<std::uint32_t>(target) == proc) &&
           not_after(id, hid);
}

// The target a handle gets when a request to proc is posted on it.
constexpr int handle_target(int target, int aggregate, int proc) noexcept {
    return aggregate != 0 && target != proc ? any_target : proc;
}

} // namespace nicoff::armci

#endif
