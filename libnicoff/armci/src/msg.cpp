// libarmci-nicoff: ARMCI's message calls (message.h).
//
// The barrier and the broadcast of SCOPE_ALL run on the card (the world
// card group); point-to-point messages, the reductions, the selection and
// the group forms go through MPI on ARMCI's own communicators, as the card
// has no reduction.  SCOPE_NODE is this process alone (a domain is one
// process, see groups.cpp); SCOPE_MASTERS is every process.
#include "groups.hpp"
#include "state.hpp"

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace nicoff::armci {

namespace {

// ARMCI's reduction names (matched on their prefix, as ARMCI-MPI does: the
// longer names first) and what they are.
struct GopName {
    std::string_view name;
    MPI_Op op;
    bool abs;     // reduce the absolute values
    bool integer; // integer types only
};

const GopName *gop_of(const char *op) {
    static const std::array<GopName, 15> table = {{
        {"+", MPI_SUM, false, false},
        {"*", MPI_PROD, false, false},
        {"max", MPI_MAX, false, false},
        {"min", MPI_MIN, false, false},
        {"absmax", MPI_MAX, true, false},
        {"absmin", MPI_MIN, true, false},
        {"or", MPI_BOR, false, true},
        {"land", MPI_LAND, false, true},
        {"&&", MPI_LAND, false, true},
        {"lor", MPI_LOR, false, true},
        {"||", MPI_LOR, false, true},
        {"band", MPI_BAND, false, true},
        {"bor", MPI_BOR, false, true},
        {"&", MPI_BAND, false, true},
        {"|", MPI_BOR, false, true},
    }};
    if (!op)
        fail(EINVAL, "a NULL operation");
    const std::string_view s(op);
    for (const GopName &g : table)
        if (s.starts_with(g.name))
            return &g;
    fail(EINVAL, std::string("unknown operation '") + op + "'");
}

MPI_Datatype mpi_type(int type) {
    switch (type) {
    case ARMCI_INT:
        return MPI_INT;
    case ARMCI_LONG:
        return MPI_LONG;
    case ARMCI_LONG_LONG:
        return MPI_LONG_LONG;
    case ARMCI_FLOAT:
        return MPI_FLOAT;
    case ARMCI_DOUBLE:
        return MPI_DOUBLE;
    default:
        fail(EINVAL, "unknown type " + std::to_string(type));
    }
}

template <class T>
void abs_all(void *x, int n) {
    auto *v = static_cast<T *>(x);
    for (int i = 0; i < n; i++)
        v[i] = v[i] < 0 ? -v[i] : v[i];
}

MPI_Comm scope_comm(int scope, const ARMCI_Group *g) {
    return scope == SCOPE_NODE ? MPI_COMM_SELF : g->comm;
}

void gop(int scope, void *x, int n, const char *op, int type, const ARMCI_Group *g) {
    members_of(g);
    const GopName *o = gop_of(op);
    const MPI_Datatype t = mpi_type(type);
    if (n < 0 || (n > 0 && !x))
        fail(EINVAL, "a bad buffer of " + std::to_string(n) + " elements");
    if (o->integer && (type == ARMCI_FLOAT || type == ARMCI_DOUBLE))
        fail(EINVAL, std::string("'") + op + "' on floating-point values");
    if (o->abs) {
        switch (type) {
        case ARMCI_INT:
            abs_all<int>(x, n);
            break;
        case ARMCI_LONG:
            abs_all<long>(x, n);
            break;
        case ARMCI_LONG_LONG:
            abs_all<long long>(x, n);
            break;
        case ARMCI_FLOAT:
            abs_all<float>(x, n);
            break;
        default:
            abs_all<double>(x, n);
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, x, n, t, o->op, scope_comm(scope, g));
}

// The first element of x as a comparable key.
long double key_of(const void *x, int type) {
    switch (type) {
    case ARMCI_INT:
        return *static_cast<const int *>(x);
    case ARMCI_LONG:
        return *static_cast<const long *>(x);
    case ARMCI_LONG_LONG:
        return *static_cast<const long long *>(x);
    case ARMCI_FLOAT:
        return *static_cast<const float *>(x);
    case ARMCI_DOUBLE:
        return *static_cast<const double *>(x);
    default:
        fail(EINVAL, "unknown type " + std::to_string(type));
    }
}

// armci_msg_sel: the n bytes of x of the contributing process whose first
// element is the least ("min") or greatest ("max"), the lowest rank on a
// tie, end up in every process's x.
void sel(int scope, void *x, int n, const char *op, int type, int contribute) {
    State &s = state();
    if (!op || (std::strncmp(op, "min", 3) != 0 && std::strncmp(op, "max", 3) != 0))
        fail(EINVAL, std::string("unknown selection '") + (op ? op : "") + "'");
    const bool min = op[1] == 'i';
    MPI_Comm comm = scope == SCOPE_NODE ? MPI_COMM_SELF : s.comm;
    struct Entry {
        long double key;
        int contribute;
    };
    const Entry mine{contribute ? key_of(x, type) : 0.0L, contribute ? 1 : 0};
    int size = 0;
    MPI_Comm_size(comm, &size);
    std::vector<Entry> all(static_cast<std::size_t>(size));
    MPI_Allgather(&mine, sizeof(Entry), MPI_BYTE, all.data(), sizeof(Entry), MPI_BYTE, comm);
    int best = -1;
    for (int i = 0; i < size; i++) {
        const Entry &e = all[static_cast<std::size_t>(i)];
        if (!e.contribute)
            continue;
        const Entry *b = best < 0 ? nullptr : &all[static_cast<std::size_t>(best)];
        if (!b || (min ? e.key < b->key : e.key > b->key))
            best = i;
    }
    if (best >= 0)
        MPI_Bcast(x, n, MPI_BYTE, best, comm);
}

void bcast(int scope, void *buf, int len, int root) {
    State &s = state();
    if (scope == SCOPE_NODE || len == 0)
        return;
    proc_of(root);
    if (len < 0 || !buf)
        fail(EINVAL, "a bad broadcast buffer");
    s.group->broadcast({static_cast<std::byte *>(buf), static_cast<std::size_t>(len)},
                       static_cast<std::uint32_t>(root));
}

} // namespace

} // namespace nicoff::armci

using namespace nicoff::armci;

extern "C" {

int armci_msg_me(void) { return world_group().rank; }
int armci_msg_nproc(void) { return world_group().size; }
double armci_timer(void) { return MPI_Wtime(); }

void armci_msg_abort(int code) {
    std::fprintf(stderr, "armci-nicoff: rank %d: armci_msg_abort(%d)\n", armci_msg_me(), code);
    MPI_Abort(MPI_COMM_WORLD, code);
}

void armci_msg_snd(int tag, void *buffer, int len, int to) {
    must("armci_msg_snd", [&] {
        proc_of(to);
        MPI_Send(buffer, len, MPI_BYTE, to, tag, state().comm);
    });
}

void armci_msg_rcv(int tag, void *buffer, int buflen, int *msglen, int from) {
    must("armci_msg_rcv", [&] {
        if (from >= 0)
            proc_of(from);
        MPI_Status st;
        MPI_Recv(buffer, buflen, MPI_BYTE, from < 0 ? MPI_ANY_SOURCE : from, tag, state().comm,
                 &st);
        if (msglen)
            MPI_Get_count(&st, MPI_BYTE, msglen);
    });
}

int armci_msg_rcvany(int tag, void *buffer, int buflen, int *msglen) {
    MPI_Status st{};
    must("armci_msg_rcvany", [&] {
        MPI_Recv(buffer, buflen, MPI_BYTE, MPI_ANY_SOURCE, tag, state().comm, &st);
        if (msglen)
            MPI_Get_count(&st, MPI_BYTE, msglen);
    });
    return st.MPI_SOURCE;
}

void parmci_msg_barrier(void) {
    must("armci_msg_barrier", [] { state().group->barrier(); });
}

void parmci_msg_group_barrier(ARMCI_Group *group) {
    must("armci_msg_group_barrier", [&] {
        members_of(group);
        MPI_Barrier(group->comm);
    });
}

void armci_msg_bintree(int scope, int *root, int *up, int *left, int *right) {
    *root = 0;
    if (scope == SCOPE_NODE) {
        *up = *left = *right = -1;
        return;
    }
    const int me = armci_msg_me(), n = armci_msg_nproc();
    *up = me == 0 ? -1 : (me - 1) / 2;
    *left = 2 * me + 1 < n ? 2 * me + 1 : -1;
    *right = 2 * me + 2 < n ? 2 * me + 2 : -1;
}

void armci_msg_bcast_scope(int scope, void *buffer, int len, int root) {
    must("armci_msg_bcast", [&] { bcast(scope, buffer, len, root); });
}

void armci_msg_bcast(void *buffer, int len, int root) {
    armci_msg_bcast_scope(SCOPE_ALL, buffer, len, root);
}

void armci_msg_brdcst(void *buffer, int len, int root) {
    armci_msg_bcast_scope(SCOPE_ALL, buffer, len, root);
}

void armci_msg_group_bcast_scope(int scope, void *buf, int len, int root, ARMCI_Group *group) {
    must("armci_msg_group_bcast_scope", [&] {
        members_of(group);
        if (scope != SCOPE_NODE)
            MPI_Bcast(buf, len, MPI_BYTE, root, group->comm);
    });
}

void armci_msg_sel_scope(int scope, void *x, int n, char *op, int type, int contribute) {
    must("armci_msg_sel", [&] { sel(scope, x, n, op, type, contribute); });
}

void armci_msg_sel(void *x, int n, char *op, int type, int contribute) {
    armci_msg_sel_scope(SCOPE_ALL, x, n, op, type, contribute);
}

void armci_msg_group_gop_scope(int scope, void *x, int n, char *op, int type, ARMCI_Group *group) {
    must("armci_msg_gop", [&] { gop(scope, x, n, op, type, group); });
}

void armci_msg_gop_scope(int scope, void *x, int n, char *op, int type) {
    armci_msg_group_gop_scope(scope, x, n, op, type, &world_group());
}

void armci_msg_igop(int *x, int n, char *op) {
    armci_msg_gop_scope(SCOPE_ALL, x, n, op, ARMCI_INT);
}
void armci_msg_lgop(long *x, int n, char *op) {
    armci_msg_gop_scope(SCOPE_ALL, x, n, op, ARMCI_LONG);
}
void armci_msg_llgop(long long *x, int n, char *op) {
    armci_msg_gop_scope(SCOPE_ALL, x, n, op, ARMCI_LONG_LONG);
}
void armci_msg_fgop(float *x, int n, char *op) {
    armci_msg_gop_scope(SCOPE_ALL, x, n, op, ARMCI_FLOAT);
}
void armci_msg_dgop(double *x, int n, char *op) {
    armci_msg_gop_scope(SCOPE_ALL, x, n, op, ARMCI_DOUBLE);
}
void armci_msg_group_igop(int *x, int n, char *op, ARMCI_Group *group) {
    armci_msg_group_gop_scope(SCOPE_ALL, x, n, op, ARMCI_INT, group);
}
void armci_msg_group_lgop(long *x, int n, char *op, ARMCI_Group *group) {
    armci_msg_group_gop_scope(SCOPE_ALL, x, n, op, ARMCI_LONG, group);
}
void armci_msg_group_llgop(long long *x, int n, char *op, ARMCI_Group *group) {
    armci_msg_group_gop_scope(SCOPE_ALL, x, n, op, ARMCI_LONG_LONG, group);
}
void armci_msg_group_fgop(float *x, int n, char *op, ARMCI_Group *group) {
    armci_msg_group_gop_scope(SCOPE_ALL, x, n, op, ARMCI_FLOAT, group);
}
void armci_msg_group_dgop(double *x, int n, char *op, ARMCI_Group *group) {
    armci_msg_group_gop_scope(SCOPE_ALL, x, n, op, ARMCI_DOUBLE, group);
}

} // extern "C"

NICOFF_ARMCI_ALIAS(armci_msg_barrier, parmci_msg_barrier);
NICOFF_ARMCI_ALIAS(armci_msg_group_barrier, parmci_msg_group_barrier);
