// libnicoff: the place of this process in a parallel job (C++20).
//
// nicoffrun (libnicoff/tools/nicoffrun) starts the N processes of a job and
// tells each one its place in the environment:
//   NICOFF_RANK, NICOFF_SIZE   this process's rank in [0, size), the job size
//   NICOFF_JOB_ID              an opaque identifier, the same for all ranks
//   NICOFF_NICS                K, the number of cards the job spreads over
//   NICOFF_PORT_BASE           P, the first port number of the job (default
//                              16: ports below P are left for other uses)
//   NICOFF_CARD, NICOFF_PORT   this rank's card and port (checked, see below)
//
// Mapping: rank r has card r % K and port P + r / K (job_placement(), the
// one definition nicoffrun uses too): ranks go round-robin over the cards,
// so a job of K ranks or fewer uses one port per card.  Any process of the
// job finds any peer's (card, port) from its rank alone.
//
// Job::from_env() reads that environment.  Each variable that is absent
// falls back on its own:
//   rank and size  the first launcher whose rank variable is set, in this
//                  order, with that launcher's size variable:
//                    NICOFF_RANK           NICOFF_SIZE
//                    OMPI_COMM_WORLD_RANK  OMPI_COMM_WORLD_SIZE   (Open MPI)
//                    PMI_RANK              PMI_SIZE               (MPICH, Hydra)
//                    PMIX_RANK             SLURM_NTASKS or OMPI_COMM_WORLD_SIZE
//                                          (PMIx has no size variable)
//                    SLURM_PROCID          SLURM_NTASKS           (srun)
//                    MV2_COMM_WORLD_RANK   MV2_COMM_WORLD_SIZE    (MVAPICH2)
//                  None set: a single-process job, rank 0 of size 1.
//   K              NICOFF_NICS, else num_cards of /dev/nicoff0 (QUERY), else
//                  (no such device) the job size: one card per rank.
//   P              NICOFF_PORT_BASE, else 16.
//   job id         NICOFF_JOB_ID, else SLURM_JOB_ID, OMPI_MCA_orte_ess_jobid
//                  or PMIX_NAMESPACE, else "" (but see Hydra below).
// Under MPICH's Hydra (mpiexec: the rank from PMI_RANK, and PMI_FD set)
// the ranks agree instead of each reading its own environment, since
// Hydra gives no job id and ranks could see different cards or variables:
// through Hydra's PMI-1 key-value space (src/pmi.hpp) rank 0 decides and
// publishes the job id, K and P (or that P is to be searched), and every
// rank reads them after a PMI barrier.  Every rank must therefore call
// from_env(); the first call of a process makes the agreement, later ones
// return it.  Rank 0 decides:
//   job id         its NICOFF_JOB_ID, else Hydra's kvsname (which names the
//                  mpiexec) and 64 random bits: unique to the job.
//   K              its NICOFF_NICS, else as above from its /dev/nicoff0.
//   P              its NICOFF_PORT_BASE, else (with a device) a search
//                  by all ranks: in rounds, each rank tries to open its own
//                  port at the round's base, drawn from 16 up to the
//                  card's max_ports by the job id (so another job tries
//                  other bases); one that cannot says so in the key-value
//                  space, and after a PMI barrier every rank knows whether
//                  all got theirs.  The device has no list of open ports,
//                  so opening is how to find a free one; and since each
//                  rank holds its own port from then on (open_port() lets
//                  go of it only to open it again with the rings asked
//                  for), a job starting at the same time cannot take it
//                  meanwhile (but in that instant).  16 rounds at the
//                  most, then EADDRINUSE.
//                  16 without a device.
// Another rank's NICOFF_JOB_ID, NICOFF_NICS or NICOFF_PORT_BASE that
// disagrees with rank 0's decision is EINVAL.  Each PMI reply is awaited at
// most NICOFF_PMI_TIMEOUT seconds (default 300): ETIMEDOUT, e.g. when a
// rank never calls from_env().  A reply Hydra refuses or that is not
// PMI-1 is EPROTO, a closed connection ECONNRESET, and when rank 0 cannot
// decide, every rank throws its error.  The connection stays open until
// the process exits and then gets Hydra's finalize (Hydra kills a job one
// of whose processes leaves without), unless an MPI library in the
// process has sent its own (MPI_Finalize): MPICH's PMI client shares the
// socket, which is safe because each side's requests are answered in
// full before it returns; so from_env() may come before MPI_Init or after
// it, but not while another thread makes MPI calls.
// NICOFF_CARD and NICOFF_PORT, when set, must agree with the mapping.
// Every card lives in one kernel, so every rank must run on this host: a
// launcher's count of the ranks here (MPI_LOCALNRANKS of Hydra,
// OMPI_COMM_WORLD_LOCAL_SIZE, MV2_COMM_WORLD_LOCAL_SIZE) other than the
// size, or SLURM_NNODES above 1, is refused.
//
// Errors: std::system_error(EINVAL) with a message naming the variable for
// a value that is not a decimal number in [0, 2^31), a rank variable set
// without its size variable (or NICOFF_SIZE without NICOFF_RANK), size 0,
// rank >= size, K = 0, a port number of the job >= 2^31, or NICOFF_CARD /
// NICOFF_PORT disagreeing, or a job on several hosts.  Querying /dev/nicoff0 (only when NICOFF_NICS
// is absent, or under Hydra NICOFF_PORT_BASE) may throw that device's error, except for "no such
// device".
//
// A Job is a value: copy it, keep it; it does not open anything until
// open_port() (but under Hydra, where the agreement holds this rank's
// port for open_port(), see above).
#ifndef NICOFF_JOB_HPP
#define NICOFF_JOB_HPP

#include <nicoff/nicoff.hpp>

#include <cerrno>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace nicoff {

// The first port number of a job unless said otherwise.
inline constexpr std::uint32_t default_port_base = 16;
// Ranks, sizes, card counts and port numbers of a job stay below 2^31 (the
// C API returns them as int).
inline constexpr std::uint32_t job_value_max = 0x7fffffff;

// A job value as the environment and nicoffrun's options give it: a decimal
// number in [0, job_value_max], digits only (no sign, no blanks); nullopt
// for anything else.
constexpr std::optional<std::uint32_t> parse_job_value(std::string_view s) noexcept {
    if (s.empty() || s.size() > 10)
        return std::nullopt;
    std::uint64_t n = 0;
    for (char c : s) {
        if (c < '0' || c > '9')
            return std::nullopt;
        n = n * 10 + static_cast<unsigned>(c - '0');
    }
    if (n > job_value_max)
        return std::nullopt;
    return static_cast<std::uint32_t>(n);
}

struct Placement {
    std::uint32_t card = 0;
    std::uint32_t port = 0;
    friend constexpr bool operator==(const Placement &, const Placement &) = default;
};

// The rank -> (card, port) mapping: card = rank % nics, port = port_base +
// rank / nics.  EINVAL for nics == 0 or a port number above job_value_max.
constexpr Placement job_placement(std::uint32_t rank, std::uint32_t nics, std::uint32_t port_base) {
    if (nics == 0)
        throw std::system_error(EINVAL, std::generic_category(), "nicoff: a job needs >= 1 card");
    const std::uint64_t port = std::uint64_t{port_base} + rank / nics;
    if (port > job_value_max)
        throw std::system_error(EINVAL, std::generic_category(),
                                "nicoff: rank " + std::to_string(rank) + " would get port " +
                                    std::to_string(port) + ", above " +
                                    std::to_string(job_value_max));
    return {rank % nics, static_cast<std::uint32_t>(port)};
}

class NICOFF_API Job {
public:
    // A job given explicitly.  EINVAL unless 1 <= size <= job_value_max,
    // rank < size, nics >= 1 and every rank's port is <= job_value_max.
    Job(std::uint32_t rank, std::uint32_t size, std::uint32_t nics,
        std::uint32_t port_base = default_port_base, std::string id = {});

    // This process's job, from the environment (see the top of this file).
    static Job from_env();

    // QUERY of /dev/nicoff0, or nullopt when there is no such device
    // (ENOENT, ENODEV, ENXIO); any other error throws.
    static std::optional<DeviceInfo> query_device();

    std::uint32_t rank() const noexcept { return rank_; }
    std::uint32_t size() const noexcept { return size_; }
    std::uint32_t nics() const noexcept { return nics_; }
    std::uint32_t port_base() const noexcept { return port_base_; }
    const std::string &id() const noexcept { return id_; }
    // The variable the rank came from ("NICOFF_RANK", "PMI_RANK", ...), or
    // "" for a job given explicitly or no launcher environment at all.
    const std::string &source() const noexcept { return source_; }

    // Any rank's place; EINVAL unless r < size().
    Placement placement_of(std::uint32_t r) const;
    std::uint32_t card_of(std::uint32_t r) const { return placement_of(r).card; }
    std::uint32_t port_of(std::uint32_t r) const { return placement_of(r).port; }
    // This rank's place.
    std::uint32_t card() const { return card_of(rank_); }
    std::uint32_t port() const { return port_of(rank_); }

    // Opens this rank's port: port() on /dev/nicoff<card()>.  rings gives
    // the ring sizes; its port field is ignored.  Under Hydra it first
    // lets go of the port the agreement held (see the top of this file).
    Port open_port(const PortConfig &rings = {}) const;

private:
    std::uint32_t rank_ = 0;
    std::uint32_t size_ = 1;
    std::uint32_t nics_ = 1;
    std::uint32_t port_base_ = default_port_base;
    std::string id_;
    std::string source_;
};

} // namespace nicoff

#endif // NICOFF_JOB_HPP
