// libarmci-nicoff: ARMCI_Malloc and ARMCI_Free (collective), their group
// forms, ARMCI_Malloc_local, ARMCI_Access_begin/end.
//
// Each process maps its piece (page-aligned, zeroed), registers it on its
// rma port with every right (and on the strided engine's port, served by
// an HBNA target, as the method needs: State::expose()), and an
// MPI_Allgather over the group spreads every piece's (card, port, rkey,
// base, size) and target address, which go into the directory that
// translates remote addresses.
#include "groups.hpp"
#include "state.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>

namespace nicoff::armci {

namespace {

void *map_bytes(std::size_t size) {
    void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        fail(errno, "mapping " + std::to_string(size) + " bytes");
    return p;
}

// Undoes State::expose(): the target first, which serves the bytes.
void unexpose(Allocation &a) {
    a.target.reset();
    a.engine_mr = MemoryRegion();
    a.mr = MemoryRegion();
}

void malloc_group(void **ptr_arr, armci_size_t bytes, const ARMCI_Group *g) {
    State &s = state();
    const std::vector<std::uint32_t> members = members_of(g);
    if (!ptr_arr)
        fail(EINVAL, "a NULL pointer array");
    if (bytes < 0)
        fail(EINVAL, "a negative size");
    Allocation a;
    a.size = static_cast<std::size_t>(bytes);
    int ok = 1;
    std::string why;
    try {
        if (a.size) {
            a.base = map_bytes(a.size);
            s.expose(a);
        }
    } catch (const std::system_error &e) {
        why = e.what();
        ok = 0;
    }
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, g->comm);
    if (!ok) {
        if (a.base) {
            unexpose(a);
            munmap(a.base, a.size);
        }
        fail(ENOMEM, why.empty() ? "another process could not allocate its piece" : why);
    }
    // card, port, rkey, base, size, then the HBNA target's address (card,
    // port, buffer rkey, flag rkey, buffers, buffer bytes; all 0: none)
    const HbnaAddress h = a.target ? a.target->address() : HbnaAddress{};
    const std::array<std::uint64_t, 11> mine = {a.mr ? s.rma->card() : 0,
                                                s.rma->number(),
                                                a.mr ? a.mr.rkey() : 0,
                                                reinterpret_cast<std::uintptr_t>(a.base),
                                                a.size,
                                                h.card,
                                                h.port,
                                                h.buf_rkey,
                                                h.flag_rkey,
                                                h.buffers,
                                                h.buffer_bytes};
    std::vector<std::array<std::uint64_t, 11>> all(members.size());
    MPI_Allgather(mine.data(), 11, MPI_UINT64_T, all.data(), 11, MPI_UINT64_T, g->comm);
    a.pieces.resize(s.nproc);
    for (std::size_t i = 0; i < members.size(); i++) {
        const auto &v = all[i];
        const auto u32 = [&v](std::size_t k) {
            return static_cast<std::uint32_t>(v[k]);
        };
        Slice &p = a.pieces[members[i]];
        p.base = v[3];
        p.size = v[4];
        p.region = {u32(0), u32(1), u32(2)};
        p.hbna = {u32(5), u32(6), u32(7), u32(8), u32(9), v[10]};
        ptr_arr[i] = reinterpret_cast<void *>(p.base);
    }
    Allocation &kept = s.allocs.emplace_back(std::move(a));
    for (std::uint32_t r = 0; r < s.nproc; r++) {
        Slice &p = kept.pieces[r];
        if (p.size == 0)
            continue;
        if (r == s.me) {
            p.mr = &kept.mr;
            p.engine_mr = &kept.engine_mr;
            s.local.add(0, p);
        }
        s.remote.add(r, p);
    }
}

// Collective over g: the allocation whose piece here is ptr (null for a
// process whose piece is empty: the others name it).  The members gather
// their pointers and each finds the allocation whose pieces they are: an
// index in creation order would differ between processes that belong to
// different groups.
void free_group(void *ptr, const ARMCI_Group *g) {
    State &s = state();
    const std::vector<std::uint32_t> members = members_of(g);
    std::vector<std::uint64_t> bases(members.size());
    const std::uint64_t mine = reinterpret_cast<std::uintptr_t>(ptr);
    MPI_Allgather(&mine, 1, MPI_UINT64_T, bases.data(), 1, MPI_UINT64_T, g->comm);
    if (std::all_of(bases.begin(), bases.end(), [](std::uint64_t b) { return b == 0; }))
        return; // every piece empty: nothing was allocated
    auto it = std::find_if(s.allocs.begin(), s.allocs.end(), [&](const Allocation &a) {
        for (std::size_t i = 0; i < members.size(); i++)
            if (a.pieces[members[i]].base != bases[i])
                return false;
        return true;
    });
    // Every member finds the same allocation or none (a pointer ARMCI_Malloc
    // did not hand out): agreed before anything is freed.
    int found = it != s.allocs.end();
    MPI_Allreduce(MPI_IN_PLACE, &found, 1, MPI_INT, MPI_MIN, g->comm);
    if (!found)
        fail(EINVAL, "ARMCI_Free of memory ARMCI_Malloc did not hand out (on some process)");
    // Nobody may still be writing into a piece when it goes.
    (void)s.wait_all();
    MPI_Barrier(g->comm);
    for (std::uint32_t r = 0; r < s.nproc; r++)
        if (it->pieces[r].size) {
            s.remote.remove(r, it->pieces[r].base);
            if (r == s.me)
                s.local.remove(0, it->pieces[r].base);
        }
    unexpose(*it);
    if (it->base)
        munmap(it->base, it->size);
    s.allocs.erase(it);
}

} // namespace

} // namespace nicoff::armci

using namespace nicoff::armci;

extern "C" {

int PARMCI_Malloc(void **base_ptrs, armci_size_t size) {
    return guarded("ARMCI_Malloc", [&] { malloc_group(base_ptrs, size, &world_group()); });
}

int PARMCI_Free(void *ptr) {
    return guarded("ARMCI_Free", [&] { free_group(ptr, &world_group()); });
}

int ARMCI_Malloc_group(void **ptr_arr, armci_size_t bytes, ARMCI_Group *group) {
    return guarded("ARMCI_Malloc_group", [&] { malloc_group(ptr_arr, bytes, group); });
}

int ARMCI_Free_group(void *ptr, ARMCI_Group *group) {
    return guarded("ARMCI_Free_group", [&] { free_group(ptr, group); });
}

// Only host memory here: the device names are accepted and ignored.
int PARMCI_Malloc_memdev(void **ptr_arr, armci_size_t bytes, const char *) {
    return PARMCI_Malloc(ptr_arr, bytes);
}

int PARMCI_Malloc_group_memdev(void **ptr_arr, armci_size_t bytes, ARMCI_Group *group,
                               const char *) {
    return ARMCI_Malloc_group(ptr_arr, bytes, group);
}

int PARMCI_Free_memdev(void *ptr) { return PARMCI_Free(ptr); }

// Registered at once, so that transfers from and to it need no
// registration of their own.
void *PARMCI_Malloc_local(armci_size_t size) {
    void *out = nullptr;
    guarded("ARMCI_Malloc_local", [&] {
        State &s = state();
        if (size < 0)
            fail(EINVAL, "a negative size");
        const std::size_t n = size ? static_cast<std::size_t>(size) : 1;
        void *p = map_bytes(n);
        try {
            const std::span<std::byte> bytes(static_cast<std::byte *>(p), n);
            nicoff::MemoryRegion mr = s.rma->register_memory(bytes, NICOFF_ACCESS_ALL);
            nicoff::MemoryRegion emr;
            if (s.engine_port)
                emr = s.engine_port->register_memory(bytes, NICOFF_ACCESS_LOCAL_WRITE);
            auto [it, fresh] = s.local_allocs.emplace(p, std::pair(std::move(mr), std::move(emr)));
            Slice sl;
            sl.base = reinterpret_cast<std::uintptr_t>(p);
            sl.size = n;
            sl.mr = &it->second.first;
            sl.engine_mr = &it->second.second;
            s.local.add(0, sl);
        } catch (...) {
            s.local_allocs.erase(p);
            munmap(p, n);
            throw;
        }
        out = p;
    });
    return out;
}

int PARMCI_Free_local(void *ptr) {
    return guarded("ARMCI_Free_local", [&] {
        State &s = state();
        auto it = s.local_allocs.find(ptr);
        if (it == s.local_allocs.end())
            fail(EINVAL, "ARMCI_Free_local of memory ARMCI_Malloc_local did not hand out");
        (void)s.wait_all(); // the card may still read or write it
        const std::size_t n = it->second.first.size();
        s.local.remove(0, reinterpret_cast<std::uintptr_t>(ptr));
        s.local_allocs.erase(it);
        munmap(ptr, n);
    });
}

// The memory is ordinary memory of this process, which the card writes
// directly: loads and stores need no window.  Begin waits for this
// process's own operations on itself, so that they are seen; end orders
// the stores before what follows.
void PARMCI_Access_begin(void *ptr) {
    must("ARMCI_Access_begin", [&] {
        State &s = state();
        if (!s.local.lookup(0, reinterpret_cast<std::uintptr_t>(ptr), 1).slice)
            fail(EINVAL, "ARMCI_Access_begin of memory ARMCI_Malloc did not hand out");
        const std::uint32_t me = s.me;
        (void)s.wait([me](const Request &r) { return r.target == me; });
    });
}

void PARMCI_Access_end(void *) { std::atomic_thread_fence(std::memory_order_seq_cst); }

} // extern "C"

NICOFF_ARMCI_ALIAS(ARMCI_Malloc, PARMCI_Malloc);
NICOFF_ARMCI_ALIAS(ARMCI_Free, PARMCI_Free);
NICOFF_ARMCI_ALIAS(ARMCI_Malloc_memdev, PARMCI_Malloc_memdev);
NICOFF_ARMCI_ALIAS(ARMCI_Malloc_group_memdev, PARMCI_Malloc_group_memdev);
NICOFF_ARMCI_ALIAS(ARMCI_Free_memdev, PARMCI_Free_memdev);
NICOFF_ARMCI_ALIAS(ARMCI_Malloc_local, PARMCI_Malloc_local);
NICOFF_ARMCI_ALIAS(ARMCI_Free_local, PARMCI_Free_local);
NICOFF_ARMCI_ALIAS(ARMCI_Access_begin, PARMCI_Access_begin);
NICOFF_ARMCI_ALIAS(ARMCI_Access_end, PARMCI_Access_end);
