// libnicoff-mpi: setting up at MPI_Init, a card group per communicator,
// progress of MPI_Ibarrier, tearing down at MPI_Finalize.
#include "runtime.hpp"

#include <nicoff/job.hpp>

#include <sys/random.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sched.h>
#include <system_error>

namespace nicoff::mpi {

namespace {

std::unique_ptr<Runtime> g_rt;
// Every CommCard alive, in creation order (which is the same on every
// member of each communicator: creation is collective), so that
// MPI_Finalize can retire those a program never freed without deadlock.
std::vector<CommCard *> g_cards;

int rank_of(MPI_Comm comm) {
    int r = 0;
    PMPI_Comm_rank(comm, &r);
    return r;
}

// The first error of this process worth a line on stderr, once.
void warn(const std::string &what) {
    static bool said;
    if (said)
        return;
    said = true;
    std::fprintf(stderr, "nicoff-mpi: rank %d: %s; passing to MPI\n", rank_of(MPI_COMM_WORLD),
                 what.c_str());
}

// A group id no other group on the cards is likely to hold: 32 random bits
// (never 0), drawn by the communicator's rank 0 and broadcast by MPI.
std::uint32_t agree_group_id(MPI_Comm comm) {
    std::uint32_t id = 0;
    if (rank_of(comm) == 0) {
        while (id == 0)
            if (getrandom(&id, sizeof(id), 0) != sizeof(id))
                id = static_cast<std::uint32_t>(std::rand()) | 1u;
    }
    PMPI_Bcast(&id, 1, MPI_UINT32_T, 0, comm);
    return id;
}

// How long rounds calls of op take on the slowest member of comm (every
// member gets the same figure); a failing op counts as forever.
template <class Op>
double slowest(MPI_Comm comm, unsigned rounds, Op op) {
    PMPI_Barrier(comm);
    const double t0 = PMPI_Wtime();
    double t = 0;
    try {
        for (unsigned i = 0; i < rounds; i++)
            op();
        t = PMPI_Wtime() - t0;
    } catch (const std::exception &) {
        t = 1e30;
    }
    PMPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm);
    return t;
}

// Whether the card's form of an operation beats MPI's on comm (seed 003's
// benchmark-driven selection, per communicator).  Untimed calls of each
// first (MPI may set up its shared memory on its first, and Open MPI's
// barrier stays slow for a while after MPI_Init), then one timed: a
// four-fold difference where the slower takes over 2 ms decides at once
// (an oversubscribed MPI barrier can take 100 ms, and a program may make
// many communicators); otherwise rounds of each.
template <class Card, class Mpi>
bool card_faster(MPI_Comm comm, unsigned rounds, Card card, Mpi mpi) {
    const unsigned warm = 1 + rounds / 8;
    slowest(comm, warm, card);
    slowest(comm, warm, mpi);
    const double c1 = slowest(comm, 1, card), m1 = slowest(comm, 1, mpi);
    // One call's time carries the members' skew leaving the barrier that
    // starts it (scheduling, with more ranks than CPUs): trusted only when
    // the slower call takes long enough to dwarf that.
    if (std::max(c1, m1) > 2e-3 && (c1 * 4 < m1 || m1 * 4 < c1))
        return c1 < m1;
    return slowest(comm, rounds, card) <= slowest(comm, rounds, mpi);
}

// Per broadcast class: the largest size it holds, the size it is timed
// at, and the share of NICOFF_MPI_SELECT_ROUNDS it runs (a 1 MiB round
// costs milliseconds).
struct BcastClassInfo {
    std::uint64_t max;
    std::size_t probe;
    unsigned rounds_div;
};
constexpr BcastClassInfo bcast_classes[] = {
    {NICOFF_BCAST_EAGER_MAX, 8, 1},
    {std::uint64_t{256} << 10, std::size_t{64} << 10, 2},
    {UINT64_MAX, std::size_t{1} << 20, 4},
};
static_assert(std::size(bcast_classes) == static_cast<std::size_t>(BcastClass::count));

} // namespace

BcastClass bcast_class(std::uint64_t bytes) noexcept {
    std::size_t i = 0;
    while (bytes > bcast_classes[i].max)
        i++;
    return static_cast<BcastClass>(i);
}

bool bcast_on_card(CommCard &c, MPI_Comm comm, std::uint64_t bytes) {
    const auto k = static_cast<std::size_t>(bcast_class(bytes));
    if (c.bcast[k] == Choice::untimed) {
        const BcastClassInfo &info = bcast_classes[k];
        const unsigned rounds = std::max(2u, runtime()->cfg.select_rounds / info.rounds_div);
        std::vector<std::byte> buf(info.probe);
        Group &g = *c.group;
        const std::span<std::byte> b(buf);
        const bool card = card_faster(
            comm, rounds, [&g, b] { g.broadcast(b, 0); },
            [comm, b] { PMPI_Bcast(b.data(), static_cast<int>(b.size()), MPI_BYTE, 0, comm); });
        c.bcast[k] = card ? Choice::card : Choice::mpi;
    }
    return c.bcast[k] == Choice::card;
}

namespace {

// Ends a communicator's card work: its MPI_Ibarriers, then one card
// barrier so that no member destroys the group while another still needs
// it (a destroyed member serves no broadcast data), then the group.
void retire(CommCard &c) noexcept {
    Runtime *rt = runtime();
    if (rt && rt->last_card == &c) {
        rt->last_comm = MPI_COMM_NULL;
        rt->last_card = nullptr;
    }
    if (rt && !c.ibarriers.empty())
        progress_until([&] { return c.ibarriers.empty(); });
    if (rt)
        std::erase(rt->with_ibarriers, &c);
    std::erase(g_cards, &c);
    if (!c.group)
        return;
    try {
        c.group->barrier();
        c.group->destroy();
    } catch (const std::exception &e) {
        warn(std::string("retiring a card group: ") + e.what());
    }
    c.group.reset();
}

int delete_card(MPI_Comm, int, void *val, void *) {
    std::unique_ptr<CommCard> c(static_cast<CommCard *>(val));
    retire(*c);
    return MPI_SUCCESS;
}

// How many cards the ranks spread over: NICOFF_NICS, else the device's.
std::uint32_t card_count() {
    if (const char *v = std::getenv("NICOFF_NICS")) {
        const auto n = parse_job_value(v);
        if (!n || *n == 0)
            throw std::system_error(EINVAL, std::generic_category(),
                                    std::string("NICOFF_NICS='") + v + "'");
        return *n;
    }
    const auto info = Job::query_device();
    if (!info)
        throw std::system_error(ENODEV, std::generic_category(), "no /dev/nicoff0");
    return info->num_cards;
}

// Why this rank cannot take part, or "" (collective: same on every rank
// only through the MIN reduction that follows).
std::string local_obstacle(const Runtime &rt, int provided) {
    if (!rt.cfg.enabled)
        return "";
    if (provided == MPI_THREAD_MULTIPLE)
        return "MPI_THREAD_MULTIPLE: the card's groups are served by one thread at a time";
    MPI_Comm node = MPI_COMM_NULL;
    int world = 0, local = 0;
    PMPI_Comm_size(MPI_COMM_WORLD, &world);
    PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    PMPI_Comm_size(node, &local);
    PMPI_Comm_free(&node);
    if (local != world)
        return "the ranks run on several hosts, and every card lives in one kernel";
    return "";
}

} // namespace

const char *why_name(Why w) noexcept {
    static constexpr const char *names[] = {"off",    "inactive", "one-process", "inter",
                                            "create", "selected", "too-big",     "empty"};
    static_assert(std::size(names) == static_cast<std::size_t>(Why::count));
    return names[static_cast<std::size_t>(w)];
}

const char *op_name(Op o) noexcept {
    static constexpr const char *names[] = {"MPI_Barrier", "MPI_Ibarrier", "MPI_Bcast"};
    static_assert(std::size(names) == static_cast<std::size_t>(Op::count));
    return names[static_cast<std::size_t>(o)];
}

Runtime *runtime() noexcept { return g_rt.get(); }

void start(int provided) {
    auto rt = std::make_unique<Runtime>();
    std::string error;
    rt->cfg = Config::from_env(error);
    rt->world_rank = rank_of(MPI_COMM_WORLD);
    int size = 0;
    PMPI_Comm_size(MPI_COMM_WORLD, &size);

    std::string why = error.empty() ? local_obstacle(*rt, provided) : error;
    int ok = rt->cfg.enabled && why.empty();
    if (ok) {
        try {
            const std::uint32_t nics = card_count();
            rt->port.emplace(static_cast<unsigned>(rt->world_rank) % nics, PortConfig{});
        } catch (const std::exception &e) {
            why = std::string("opening a port: ") + e.what();
            ok = 0;
        }
    }
    PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok) {
        rt->port.reset();
        if (why.empty())
            why = rt->cfg.enabled ? "another rank could not take part" : "NICOFF_MPI=0";
        rt->inactive_why = why;
        if ((rt->cfg.enabled || !error.empty()) && rt->world_rank == 0)
            warn(why); // one line for the job, not one per rank
        g_rt = std::move(rt);
        return;
    }
    std::uint32_t mine[2] = {rt->port->card(), rt->port->number()};
    rt->world.resize(static_cast<std::size_t>(size));
    PMPI_Allgather(mine, 2, MPI_UINT32_T, rt->world.data(), 2, MPI_UINT32_T, MPI_COMM_WORLD);
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_card, &rt->keyval, nullptr);
    rt->active = true;
    g_rt = std::move(rt);
    attach(MPI_COMM_WORLD);
}

void attach(MPI_Comm comm) {
    Runtime *rt = runtime();
    if (!rt || !rt->active || comm == MPI_COMM_NULL)
        return;
    auto c = std::make_unique<CommCard>();
    int inter = 0, size = 0, rank = 0;
    PMPI_Comm_test_inter(comm, &inter);
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(comm, &rank);
    if (inter) {
        c->why = Why::inter;
    } else if (size < 2) {
        c->why = Why::small;
    } else {
        // Each member's world rank, hence its (card, port).
        MPI_Group mine = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
        PMPI_Comm_group(comm, &mine);
        PMPI_Comm_group(MPI_COMM_WORLD, &world);
        std::vector<int> ranks(static_cast<std::size_t>(size)), wr(ranks.size());
        for (int i = 0; i < size; i++)
            ranks[static_cast<std::size_t>(i)] = i;
        PMPI_Group_translate_ranks(mine, size, ranks.data(), world, wr.data());
        PMPI_Group_free(&mine);
        PMPI_Group_free(&world);
        std::vector<nicoff_member> members;
        for (int w : wr)
            members.push_back(rt->world[static_cast<std::size_t>(w)]);

        const std::uint32_t id = agree_group_id(comm);
        int ok = 1;
        try {
            c->group =
                std::make_unique<Group>(*rt->port, members, static_cast<std::uint32_t>(rank), id);
        } catch (const std::exception &e) {
            warn(std::string("creating a card group: ") + e.what());
            ok = 0;
        }
        PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
        if (!ok) {
            c->group.reset();
            c->why = Why::create;
        } else {
            rt->n.groups++;
            c->barrier = true;
            if (rt->cfg.select == Select::time)
                c->barrier = card_faster(
                    comm, rt->cfg.select_rounds, [&g = *c->group] { g.barrier(); },
                    [comm] { PMPI_Barrier(comm); });
            else
                c->bcast.fill(Choice::card);
            (c->barrier ? rt->n.chose_card : rt->n.chose_mpi)++;
        }
    }
    g_cards.push_back(c.get());
    PMPI_Comm_set_attr(comm, rt->keyval, c.release());
}

CommCard &card_of(MPI_Comm comm) {
    Runtime *rt = runtime();
    if (CommCard *c = last_card_of(*rt, comm))
        return *c;
    void *val = nullptr;
    int flag = 0;
    PMPI_Comm_get_attr(comm, rt->keyval, &val, &flag);
    if (!flag) {
        attach(comm); // a communicator made by a call not interposed
        PMPI_Comm_get_attr(comm, rt->keyval, &val, &flag);
    }
    rt->last_comm = comm;
    rt->last_card = static_cast<CommCard *>(val);
    return *rt->last_card;
}

void progress() {
    Runtime *rt = runtime();
    if (!rt)
        return;
    for (std::size_t i = 0; i < rt->with_ibarriers.size();) {
        CommCard &c = *rt->with_ibarriers[i];
        while (!c.ibarriers.empty()) {
            PendingBarrier &p = c.ibarriers.front();
            try {
                if (!p.started) {
                    c.group->start_barrier();
                    p.started = true;
                }
                if (!c.group->test_barrier())
                    break;
            } catch (const std::exception &e) {
                warn(std::string("MPI_Ibarrier on the card: ") + e.what());
                *p.error = MPI_ERR_OTHER;
            }
            MPI_Request req = p.req;
            const bool detached = p.detached;
            c.ibarriers.pop_front();
            PMPI_Grequest_complete(req);
            if (detached)
                PMPI_Request_free(&req);
        }
        if (c.ibarriers.empty())
            rt->with_ibarriers.erase(rt->with_ibarriers.begin() + static_cast<std::ptrdiff_t>(i));
        else
            i++;
    }
}

PendingBarrier *find_card_request(MPI_Request req) noexcept {
    Runtime *rt = runtime();
    if (!rt || req == MPI_REQUEST_NULL)
        return nullptr;
    for (CommCard *c : rt->with_ibarriers)
        for (PendingBarrier &p : c->ibarriers)
            if (p.req == req)
                return &p;
    return nullptr;
}

bool is_card_request(MPI_Request req) noexcept { return find_card_request(req) != nullptr; }

void progress_pause() {
    // MPI's own progress (what other ranks may wait for before they enter
    // our barrier), then a short sleep on the port rather than a spin: with
    // more ranks than CPUs a spinning rank steals the card's thread.
    int flag = 0;
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    Runtime *rt = runtime();
    try {
        if (rt && rt->port)
            rt->port->wait(std::chrono::milliseconds(1));
        else
            sched_yield();
    } catch (const std::exception &) {
        sched_yield(); // the port failed: the barrier's test reports it
    }
}

int comm_error(MPI_Comm comm, const char *what, int err) {
    std::fprintf(stderr, "nicoff-mpi: rank %d: %s: %s\n", rank_of(MPI_COMM_WORLD), what,
                 std::strerror(err));
    PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
    return MPI_ERR_OTHER;
}

namespace {

void report(const Runtime &rt) {
    constexpr std::size_t nops = static_cast<std::size_t>(Op::count);
    constexpr std::size_t nwhy = static_cast<std::size_t>(Why::count);
    std::vector<std::uint64_t> v;
    v.insert(v.end(), rt.n.card.begin(), rt.n.card.end());
    v.insert(v.end(), rt.n.mpi.begin(), rt.n.mpi.end());
    v.insert(v.end(), rt.n.why.begin(), rt.n.why.end());
    v.push_back(rt.n.bcast_bytes);
    v.push_back(rt.n.groups);
    v.push_back(rt.n.chose_card);
    v.push_back(rt.n.chose_mpi);
    std::vector<std::uint64_t> sum(v.size());
    PMPI_Reduce(v.data(), sum.data(), static_cast<int>(v.size()), MPI_UINT64_T, MPI_SUM, 0,
                MPI_COMM_WORLD);
    if (rt.world_rank != 0)
        return;
    int size = 0;
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!rt.active)
        std::printf("nicoff-mpi: not active: %s\n", rt.inactive_why.c_str());
    std::printf("nicoff-mpi: %d ranks, %llu card groups (summed over ranks); barriers on the card "
                "in %llu, on MPI in %llu\n",
                size, static_cast<unsigned long long>(sum[2 * nops + nwhy + 1]),
                static_cast<unsigned long long>(sum[2 * nops + nwhy + 2]),
                static_cast<unsigned long long>(sum[2 * nops + nwhy + 3]));
    for (std::size_t o = 0; o < nops; o++) {
        std::printf("nicoff-mpi: %s: %llu on the card, %llu passed to MPI", op_name(Op(o)),
                    static_cast<unsigned long long>(sum[o]),
                    static_cast<unsigned long long>(sum[nops + o]));
        if (Op(o) == Op::bcast)
            std::printf(" (%llu bytes on the card)",
                        static_cast<unsigned long long>(sum[2 * nops + nwhy]));
        std::printf("\n");
    }
    std::printf("nicoff-mpi: passed to MPI because:");
    bool any = false;
    for (std::size_t w = 0; w < nwhy; w++) {
        if (!sum[2 * nops + w])
            continue;
        std::printf(" %s %llu", why_name(Why(w)),
                    static_cast<unsigned long long>(sum[2 * nops + w]));
        any = true;
    }
    std::printf("%s\n", any ? "" : " (nothing passed)");
    std::fflush(stdout);
}

} // namespace

void finish() {
    Runtime *rt = runtime();
    if (!rt)
        return;
    if (rt->active) {
        // MPI_COMM_WORLD's group through its delete callback, then those of
        // communicators never freed, oldest first.
        PMPI_Comm_delete_attr(MPI_COMM_WORLD, rt->keyval);
        while (!g_cards.empty())
            retire(*g_cards.front());
        PMPI_Comm_free_keyval(&rt->keyval);
    }
    if (rt->cfg.report)
        report(*rt);
    rt->port.reset();
    g_rt.reset();
}

} // namespace nicoff::mpi
