// libarmci-nicoff: ARMCI groups (through MPI), the topology calls and the
// odds and ends of armci.h.
//
// A domain (armci_domain_*, ARMCI_Same_node) is one process, as in
// ARMCI-MPI: every process of the job runs on this one host, but the
// memory ARMCI_Malloc hands out is private to its process and reached by
// the others only through the card, never by loads and stores.
#include "groups.hpp"
#include "state.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace nicoff::armci {

namespace {

ARMCI_Group g_world{MPI_COMM_NULL, MPI_COMM_NULL, nullptr, nullptr, -1, 0};
ARMCI_Group g_default = g_world;

// Fills a group's descriptor from its communicator (null on processes
// outside it): the rank tables in world ranks.
void describe(MPI_Comm comm, ARMCI_Group *out) {
    State &s = state();
    *out = {comm, MPI_COMM_NULL, nullptr, nullptr, -1, 0};
    if (comm == MPI_COMM_NULL)
        return;
    MPI_Comm_rank(comm, &out->rank);
    MPI_Comm_size(comm, &out->size);
    MPI_Group mine = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
    MPI_Comm_group(comm, &mine);
    MPI_Comm_group(s.comm, &world);
    const auto n = static_cast<std::size_t>(out->size);
    std::vector<int> ranks(n);
    for (std::size_t i = 0; i < n; i++)
        ranks[i] = static_cast<int>(i);
    out->grp_to_abs = static_cast<int *>(std::calloc(n, sizeof(int)));
    out->abs_to_grp = static_cast<int *>(std::calloc(s.nproc, sizeof(int)));
    if (!out->grp_to_abs || !out->abs_to_grp)
        fail(ENOMEM, "a group's rank tables");
    MPI_Group_translate_ranks(mine, out->size, ranks.data(), world, out->grp_to_abs);
    for (std::uint32_t i = 0; i < s.nproc; i++)
        out->abs_to_grp[i] = -1;
    for (std::size_t i = 0; i < n; i++)
        out->abs_to_grp[out->grp_to_abs[i]] = static_cast<int>(i);
    MPI_Group_free(&mine);
    MPI_Group_free(&world);
}

void release(ARMCI_Group *g) {
    std::free(g->grp_to_abs);
    std::free(g->abs_to_grp);
    if (g->comm != MPI_COMM_NULL)
        MPI_Comm_free(&g->comm);
    *g = {MPI_COMM_NULL, MPI_COMM_NULL, nullptr, nullptr, -1, 0};
}

// Collective over parent: the group of pid_list (ranks in parent).
void create_child(int n, const int *pid_list, ARMCI_Group *out, const ARMCI_Group *parent) {
    members_of(parent);
    if (!out || n < 0 || (n > 0 && !pid_list))
        fail(EINVAL, "a bad member list");
    for (int i = 0; i < n; i++)
        if (pid_list[i] < 0 || pid_list[i] >= parent->size)
            fail(EINVAL, "member " + std::to_string(pid_list[i]) + " is not in the parent");
    MPI_Group pg = MPI_GROUP_NULL, g = MPI_GROUP_NULL;
    MPI_Comm_group(parent->comm, &pg);
    MPI_Group_incl(pg, n, pid_list, &g);
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Comm_create(parent->comm, g, &comm);
    MPI_Group_free(&g);
    MPI_Group_free(&pg);
    describe(comm, out);
}

} // namespace

ARMCI_Group &world_group() { return g_world; }
ARMCI_Group &default_group() { return g_default; }

void make_world_group(MPI_Comm comm) {
    MPI_Comm dup = MPI_COMM_NULL;
    MPI_Comm_dup(comm, &dup);
    describe(dup, &g_world);
    g_default = g_world;
}

void free_world_group() {
    release(&g_world);
    g_default = g_world;
}

std::vector<std::uint32_t> members_of(const ARMCI_Group *g) {
    if (!g || g->comm == MPI_COMM_NULL || !g->grp_to_abs)
        fail(EINVAL, "a group this process is not a member of");
    return {g->grp_to_abs, g->grp_to_abs + g->size};
}

} // namespace nicoff::armci

using namespace nicoff::armci;

extern "C" {

void ARMCI_Group_create_child(int grp_size, int *pid_list, ARMCI_Group *group_out,
                              ARMCI_Group *group_parent) {
    must("ARMCI_Group_create_child",
         [&] { create_child(grp_size, pid_list, group_out, group_parent); });
}

void ARMCI_Group_create(int grp_size, int *pid_list, ARMCI_Group *group_out) {
    must("ARMCI_Group_create",
         [&] { create_child(grp_size, pid_list, group_out, &default_group()); });
}

void ARMCI_Group_free(ARMCI_Group *group) {
    if (group && group->comm != world_group().comm)
        release(group);
}

int ARMCI_Group_rank(ARMCI_Group *group, int *rank) {
    if (!group || !rank)
        return EINVAL;
    *rank = group->rank;
    return 0;
}

void ARMCI_Group_size(ARMCI_Group *group, int *size) {
    if (group && size)
        *size = group->size;
}

// The default group is what ARMCI_Group_create's lists refer to; the
// descriptor is shared, not copied (as ARMCI-MPI does).
void ARMCI_Group_set_default(ARMCI_Group *group) {
    if (group)
        default_group() = *group;
}

void ARMCI_Group_get_default(ARMCI_Group *group_out) {
    if (group_out)
        *group_out = default_group();
}

void ARMCI_Group_get_world(ARMCI_Group *group_out) {
    if (group_out)
        *group_out = world_group();
}

int ARMCI_Absolute_id(ARMCI_Group *group, int group_rank) {
    if (!group || !group->grp_to_abs || group_rank < 0 || group_rank >= group->size)
        return -1;
    return group->grp_to_abs[group_rank];
}

int armci_domain_nprocs(armci_domain_t, int) { return 1; }
int armci_domain_id(armci_domain_t, int glob_proc_id) { return glob_proc_id; }
int armci_domain_glob_proc_id(armci_domain_t, int domain_id, int) { return domain_id; }
int armci_domain_my_id(armci_domain_t) { return world_group().rank; }
int armci_domain_count(armci_domain_t) { return world_group().size; }
int armci_domain_same_id(armci_domain_t, int proc) { return proc == world_group().rank; }
int ARMCI_Same_node(int proc) { return proc == world_group().rank; }

// No shared memory: the others' memory is reached through the card only.
int ARMCI_Uses_shm(void) { return 0; }
int ARMCI_Uses_shm_grp(ARMCI_Group *) { return 0; }
void ARMCI_Set_shm_limit(unsigned long) {}

void ARMCI_Error(const char *msg, int code) {
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::fprintf(stderr, "armci-nicoff: rank %d: ARMCI_Error: %s (%d)\n", rank, msg ? msg : "",
                 code);
    MPI_Abort(MPI_COMM_WORLD, code);
}

} // extern "C"
