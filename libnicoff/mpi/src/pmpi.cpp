// libnicoff-mpi: the interposed MPI calls (PMPI profiling interface).
//
// Each definition here replaces the MPI library's (weak) symbol of the same
// name and reaches the real call through its PMPI_ twin.  MPICH's Fortran
// bindings call these C symbols, so Fortran programs are served too.
#include "runtime.hpp"

#include <algorithm>
#include <exception>
#include <system_error>
#include <vector>

using namespace nicoff::mpi;

namespace {

// The card serves op on comm, or why not (every member of comm reaches the
// same answer: it depends only on what was agreed at creation).
std::optional<Why> obstacle(Op op, MPI_Comm comm, CommCard *&card) {
    Runtime *rt = runtime();
    card = nullptr;
    if (!rt->active)
        return rt->cfg.enabled ? Why::no_card : Why::off;
    const bool on = op == Op::bcast     ? rt->cfg.bcast
                    : op == Op::barrier ? rt->cfg.barrier
                                        : rt->cfg.ibarrier;
    if (!on)
        return Why::off;
    card = &card_of(comm);
    if (!card->group)
        return card->why;
    if (op != Op::bcast && !card->barrier)
        return Why::selected;
    return std::nullopt;
}

// A communicator this library can look at (MPI reports the others' errors):
// the one served last, or one MPI takes.
bool usable(MPI_Comm comm) {
    const Runtime *rt = runtime();
    if (!rt || comm == MPI_COMM_NULL)
        return false;
    if (last_card_of(*rt, comm))
        return true;
    int size = 0;
    return PMPI_Comm_size(comm, &size) == MPI_SUCCESS;
}

// What MPI's constructor of a communicator returned, once the new one has
// its card group.
int created(int rc, const MPI_Comm *newcomm) {
    if (rc == MPI_SUCCESS && runtime() && *newcomm != MPI_COMM_NULL)
        attach(*newcomm);
    return rc;
}

int query_barrier(void *extra, MPI_Status *status) {
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    return *static_cast<int *>(extra);
}

int free_barrier(void *extra) {
    std::unique_ptr<int> err(static_cast<int *>(extra));
    return MPI_SUCCESS;
}

// A barrier cannot be withdrawn once the others may have counted it.
int cancel_barrier(void *, int) { return MPI_SUCCESS; }

bool any_card_request(int n, const MPI_Request reqs[]) {
    for (int i = 0; i < n; i++)
        if (is_card_request(reqs[i]))
            return true;
    return false;
}

// A form of MPI_Wait over several requests where some are the card's:
// looks with the matching MPI_Test form until it reports something.
template <class Test>
int wait_by_testing(Test test) {
    int rc = MPI_SUCCESS;
    progress_until([&] {
        int flag = 0;
        rc = test(flag);
        return rc != MPI_SUCCESS || flag;
    });
    return rc;
}

} // namespace

// The library hides its symbols but these: they are what it is for.
#pragma GCC visibility push(default)
extern "C" {

int MPI_Init(int *argc, char ***argv) {
    const int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) {
        int provided = MPI_THREAD_SINGLE;
        PMPI_Query_thread(&provided);
        start(provided);
    }
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    const int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        start(*provided);
    return rc;
}

int MPI_Finalize(void) {
    finish();
    return PMPI_Finalize();
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) {
    return created(PMPI_Comm_dup(comm, newcomm), newcomm);
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm) {
    return created(PMPI_Comm_dup_with_info(comm, info, newcomm), newcomm);
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm) {
    return created(PMPI_Comm_split(comm, color, key, newcomm), newcomm);
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm) {
    return created(PMPI_Comm_split_type(comm, split_type, key, info, newcomm), newcomm);
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm) {
    return created(PMPI_Comm_create(comm, group, newcomm), newcomm);
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm) {
    return created(PMPI_Comm_create_group(comm, group, tag, newcomm), newcomm);
}

int MPI_Barrier(MPI_Comm comm) {
    if (!usable(comm))
        return PMPI_Barrier(comm);
    Runtime &rt = *runtime();
    CommCard *c = nullptr;
    if (const auto why = obstacle(Op::barrier, comm, c)) {
        rt.count_mpi(Op::barrier, *why);
        return PMPI_Barrier(comm);
    }
    // The communicator's earlier MPI_Ibarriers reach the card first.
    progress_until([c] { return c->ibarriers.empty(); });
    try {
        c->group->barrier();
    } catch (const std::system_error &e) {
        return comm_error(comm, "MPI_Barrier on the card", e.code().value());
    }
    rt.count_card(Op::barrier);
    return MPI_SUCCESS;
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request) {
    if (!usable(comm))
        return PMPI_Ibarrier(comm, request);
    Runtime &rt = *runtime();
    CommCard *c = nullptr;
    if (const auto why = obstacle(Op::ibarrier, comm, c)) {
        rt.count_mpi(Op::ibarrier, *why);
        return PMPI_Ibarrier(comm, request);
    }
    auto err = std::make_unique<int>(MPI_SUCCESS);
    const int rc =
        PMPI_Grequest_start(query_barrier, free_barrier, cancel_barrier, err.get(), request);
    if (rc != MPI_SUCCESS)
        return rc;
    c->ibarriers.push_back({.req = *request, .error = err.release()});
    if (std::find(rt.with_ibarriers.begin(), rt.with_ibarriers.end(), c) == rt.with_ibarriers.end())
        rt.with_ibarriers.push_back(c);
    progress(); // the first one goes to the card now
    rt.count_card(Op::ibarrier);
    return MPI_SUCCESS;
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
    if (!usable(comm) || count < 0)
        return PMPI_Bcast(buffer, count, datatype, root, comm);
    Runtime &rt = *runtime();
    CommCard *c = nullptr;
    auto why = obstacle(Op::bcast, comm, c);
    int tsize = 0, size = 0, rank = 0;
    if (!why) {
        PMPI_Comm_size(comm, &size);
        if (root < 0 || root >= size || PMPI_Type_size(datatype, &tsize) != MPI_SUCCESS)
            return PMPI_Bcast(buffer, count, datatype, root, comm); // MPI names the error
        // Every member has the same byte count (MPI's rule for matching
        // type signatures), so every member decides alike.
        const std::uint64_t bytes = std::uint64_t(tsize) * std::uint64_t(count);
        if (bytes == 0)
            why = Why::empty;
        else if (bytes > rt.cfg.bcast_max)
            why = Why::too_big;
        else if (!bcast_on_card(*c, comm, bytes))
            why = Why::selected;
    }
    if (why) {
        rt.count_mpi(Op::bcast, *why);
        return PMPI_Bcast(buffer, count, datatype, root, comm);
    }
    PMPI_Comm_rank(comm, &rank);
    const std::size_t bytes = std::size_t(tsize) * std::size_t(count);
    MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
    PMPI_Type_get_extent(datatype, &lb, &extent);
    PMPI_Type_get_true_extent(datatype, &tlb, &textent);
    // Bytes without holes go as they lie; any other layout is packed by MPI
    // (the same type signature packs to the same bytes on every member).
    const bool contiguous = textent == tsize && (count == 1 || extent == tsize);
    std::vector<std::byte> packed;
    std::span<std::byte> data;
    if (contiguous) {
        data = {static_cast<std::byte *>(buffer) + tlb, bytes};
    } else {
        packed.resize(bytes);
        data = packed;
        if (rank == root) {
            int pos = 0;
            const int rc = PMPI_Pack(buffer, count, datatype, packed.data(),
                                     static_cast<int>(bytes), &pos, comm);
            if (rc != MPI_SUCCESS)
                return rc;
        }
    }
    try {
        c->group->broadcast(data, static_cast<std::uint32_t>(root));
    } catch (const std::system_error &e) {
        return comm_error(comm, "MPI_Bcast on the card", e.code().value());
    }
    if (!contiguous && rank != root) {
        int pos = 0;
        const int rc = PMPI_Unpack(packed.data(), static_cast<int>(bytes), &pos, buffer, count,
                                   datatype, comm);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    rt.count_card(Op::bcast);
    rt.n.bcast_bytes += bytes;
    return MPI_SUCCESS;
}

int MPI_Wait(MPI_Request *request, MPI_Status *status) {
    if (is_card_request(*request))
        progress_until([request] { return !is_card_request(*request); });
    return PMPI_Wait(request, status);
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
    progress();
    return PMPI_Test(request, flag, status);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
    if (any_card_request(count, requests))
        progress_until([&] { return !any_card_request(count, requests); });
    return PMPI_Waitall(count, requests, statuses);
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[]) {
    progress();
    return PMPI_Testall(count, requests, flag, statuses);
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status) {
    if (!any_card_request(count, requests))
        return PMPI_Waitany(count, requests, index, status);
    return wait_by_testing(
        [&](int &flag) { return PMPI_Testany(count, requests, index, &flag, status); });
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status) {
    progress();
    return PMPI_Testany(count, requests, index, flag, status);
}

int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[]) {
    if (!any_card_request(incount, requests))
        return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    return wait_by_testing([&](int &flag) {
        const int rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
        flag = *outcount != 0;
        return rc;
    });
}

int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[]) {
    progress();
    return PMPI_Testsome(incount, requests, outcount, indices, statuses);
}

// A freed MPI_Ibarrier still runs to its end on the card (the other members
// count on it); the library frees it then.
int MPI_Request_free(MPI_Request *request) {
    if (PendingBarrier *p = find_card_request(*request)) {
        p->detached = true;
        *request = MPI_REQUEST_NULL;
        return MPI_SUCCESS;
    }
    return PMPI_Request_free(request);
}

} // extern "C"
#pragma GCC visibility pop
