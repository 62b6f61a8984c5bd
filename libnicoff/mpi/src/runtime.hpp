// libnicoff-mpi: the state behind the interposed MPI calls.
//
// One Runtime per process, made in MPI_Init: this rank's port on its card,
// every world rank's (card, port), the configuration read from the
// environment and the counters MPI_Finalize reports.  Each communicator
// the library serves carries a CommCard (an MPI attribute, so that
// MPI_Comm_free destroys it through the attribute's delete callback): its
// card group, what the library chose to run on the card for it, and the
// MPI_Ibarrier requests it still has to finish.  Everything here is used
// by one thread at a time (the library refuses MPI_THREAD_MULTIPLE).
#ifndef NICOFF_MPI_RUNTIME_HPP
#define NICOFF_MPI_RUNTIME_HPP

#include <mpi.h>

#include <nicoff/group.hpp>
#include <nicoff/nicoff.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nicoff::mpi {

// What an interposed call did, for the report at MPI_Finalize.
enum class Op { barrier, ibarrier, bcast, count };
// Why a call went to MPI instead of the card (one table: why_name()).
enum class Why {
    off,      // turned off by the environment
    no_card,  // the library is not active (no device, several hosts, threads)
    small,    // a communicator of one process
    inter,    // an inter-communicator
    create,   // the card group could not be created
    selected, // the timing found MPI's form faster
    too_big,  // a broadcast above NICOFF_MPI_BCAST_MAX
    empty,    // a broadcast of no bytes
    count
};
const char *why_name(Why w) noexcept;
const char *op_name(Op o) noexcept;

enum class Select { card, time };

struct Config {
    bool enabled = true; // NICOFF_MPI
    bool barrier = true; // NICOFF_MPI_BARRIER
    bool ibarrier = true;
    bool bcast = true;
    bool report = false;                               // NICOFF_MPI_REPORT
    Select select = Select::time;                      // NICOFF_MPI_SELECT
    unsigned select_rounds = 16;                       // NICOFF_MPI_SELECT_ROUNDS
    std::uint64_t bcast_max = std::uint64_t{16} << 20; // NICOFF_MPI_BCAST_MAX
    // Reads the environment; an invalid value is named in error (and the
    // library then stays out of the way).
    static Config from_env(std::string &error);
};

struct Counters {
    std::array<std::uint64_t, static_cast<std::size_t>(Op::count)> card{};
    std::array<std::uint64_t, static_cast<std::size_t>(Op::count)> mpi{};
    std::array<std::uint64_t, static_cast<std::size_t>(Why::count)> why{};
    std::uint64_t bcast_bytes = 0; // moved by the card
    std::uint64_t groups = 0;      // card groups created
    std::uint64_t chose_card = 0;  // groups whose barriers run on the card
    std::uint64_t chose_mpi = 0;   // groups whose barriers the timing gave to MPI
};

// An MPI_Ibarrier the card runs: its generalized request, in the order the
// communicator's barriers were posted (every member posts them to the card
// in that order, one at a time).
struct PendingBarrier {
    MPI_Request req = MPI_REQUEST_NULL;
    bool started = false;
    bool detached = false; // MPI_Request_free'd: freed once complete
    int *error = nullptr;  // the request's extra state: the MPI error to report
};

// The broadcast sizes the selection times apart, each at its own probe
// size: the card's broadcast changes at NICOFF_BCAST_EAGER_MAX (data
// leaves the channel) and MPI's algorithms change within the larger sizes
// (one probe of 64 KiB chose wrongly for 1 MiB).  One table:
// bcast_classes[] in runtime.cpp.
enum class BcastClass : std::uint8_t { small, medium, large, count };
BcastClass bcast_class(std::uint64_t bytes) noexcept;

// Which of the card and MPI serves a kind of call on a communicator.
enum class Choice : std::uint8_t { untimed, card, mpi };

struct CommCard {
    std::unique_ptr<Group> group;
    Why why = Why::no_card; // why the card serves nothing, when group is null
    bool barrier = false;   // MPI_Barrier and MPI_Ibarrier on the card
    // MPI_Bcast per size class: timed on the communicator's first broadcast
    // of the class (every member calls it with the same byte count, so
    // every member times it at the same call), so that a communicator
    // that never broadcasts pays nothing for it.
    std::array<Choice, static_cast<std::size_t>(BcastClass::count)> bcast{};
    std::deque<PendingBarrier> ibarriers;
};

// Whether comm's broadcasts of bytes go to the card, timing their class
// first if no broadcast of it has come yet (collective over comm).
bool bcast_on_card(CommCard &c, MPI_Comm comm, std::uint64_t bytes);

struct Runtime {
    Config cfg;
    bool active = false;      // the card serves calls
    std::string inactive_why; // why not, for the report
    std::optional<Port> port;
    std::vector<nicoff_member> world; // by MPI_COMM_WORLD rank
    int world_rank = 0;
    int keyval = MPI_KEYVAL_INVALID;
    Counters n;
    std::vector<CommCard *> with_ibarriers; // communicators with requests to progress
    // The communicator card_of() served last and its CommCard (until it is
    // retired): a program calls its collectives on one communicator over
    // and over, and MPI's attribute lookup and handle checks cost more
    // than a passed-through barrier of two ranks.
    MPI_Comm last_comm = MPI_COMM_NULL;
    CommCard *last_card = nullptr;

    void count_card(Op o) noexcept { n.card[static_cast<std::size_t>(o)]++; }
    void count_mpi(Op o, Why w) noexcept {
        n.mpi[static_cast<std::size_t>(o)]++;
        n.why[static_cast<std::size_t>(w)]++;
    }
};

// The process's runtime, or null before MPI_Init and after MPI_Finalize.
Runtime *runtime() noexcept;

// MPI_Init's second half and MPI_Finalize's first: set up and tear down.
void start(int provided);
void finish();

// The communicator's CommCard, made (collectively) on first use.
CommCard &card_of(MPI_Comm comm);
// comm's CommCard if card_of() served it last, else null.
inline CommCard *last_card_of(const Runtime &rt, MPI_Comm comm) noexcept {
    return comm != MPI_COMM_NULL && comm == rt.last_comm ? rt.last_card : nullptr;
}
// Makes comm's CommCard now (a communicator just created).
void attach(MPI_Comm comm);

// Moves every communicator's MPI_Ibarriers on as far as the card allows,
// without sleeping.
void progress();
// req's entry if it is an MPI_Ibarrier of the card still running.
PendingBarrier *find_card_request(MPI_Request req) noexcept;
bool is_card_request(MPI_Request req) noexcept;
// Keeps MPI's own progress going and sleeps briefly on the port: what a
// wait does between two looks.
void progress_pause();

// Reports an error of comm through its error handler (MPI's rule for a
// failed call) and returns the code.
int comm_error(MPI_Comm comm, const char *what, int err);

// Progresses until done().
template <class F>
void progress_until(F done) {
    for (;;) {
        progress();
        if (done())
            return;
        progress_pause();
    }
}

} // namespace nicoff::mpi

#endif // NICOFF_MPI_RUNTIME_HPP
