// libarmci-nicoff: ARMCI groups (an MPI communicator and the world ranks
// of its members) as the calls that take one need them.
#ifndef NICOFF_ARMCI_GROUPS_HPP
#define NICOFF_ARMCI_GROUPS_HPP

#include "abi.hpp"

#include <cstdint>
#include <vector>

namespace nicoff::armci {

// The world group's descriptor (filled by ARMCI_Init) and the default one.
ARMCI_Group &world_group();
ARMCI_Group &default_group();
void make_world_group(MPI_Comm comm);
void free_world_group();
// A group's member world ranks, in group rank order; EINVAL for a null
// group or a process outside it.
std::vector<std::uint32_t> members_of(const ARMCI_Group *g);

} // namespace nicoff::armci

#endif
