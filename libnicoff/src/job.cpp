// nicoff::Job: the job environment of nicoffrun or of an MPI launcher.
#include "common.hpp"

#include <algorithm>
#include <cstdlib>
#include <utility>

namespace nicoff {

namespace {

// getenv() as an optional: set (possibly empty) or not.
std::optional<std::string> env(const char *name) {
    const char *v = std::getenv(name);
    if (!v)
        return std::nullopt;
    return std::string(v);
}

// parse_job_value(), or EINVAL naming the variable.
std::uint32_t parse_value(const char *name, const std::string &v) {
    if (const std::optional<std::uint32_t> n = parse_job_value(v))
        return *n;
    detail::throw_errno(EINVAL, std::string("nicoff: ") + name + "='" + v +
                                    "' is not a number in [0, " + std::to_string(job_value_max) +
                                    "]");
}

std::optional<std::uint32_t> env_value(const char *name) {
    if (auto v = env(name))
        return parse_value(name, *v);
    return std::nullopt;
}

struct Launcher {
    const char *rank;
    const char *sizes[2]; // the first one set gives the size
};

// In order of precedence; see job.hpp.
constexpr Launcher launchers[] = {
    {"NICOFF_RANK", {"NICOFF_SIZE", nullptr}},
    {"OMPI_COMM_WORLD_RANK", {"OMPI_COMM_WORLD_SIZE", nullptr}},
    {"PMI_RANK", {"PMI_SIZE", nullptr}},
    {"PMIX_RANK", {"SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE"}},
    {"SLURM_PROCID", {"SLURM_NTASKS", nullptr}},
    {"MV2_COMM_WORLD_RANK", {"MV2_COMM_WORLD_SIZE", nullptr}},
};

// How many of the job's ranks a launcher put on this host (Slurm: on how
// many hosts the job runs).  Every card lives in one kernel, so a job whose
// ranks are not all here cannot be served.
constexpr const char *local_size_vars[] = {"MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE",
                                           "MV2_COMM_WORLD_LOCAL_SIZE"};

void check_one_host(std::uint32_t size) {
    for (const char *v : local_size_vars) {
        const std::optional<std::uint32_t> here = env_value(v);
        if (here && *here != size)
            detail::throw_errno(EINVAL, std::string("nicoff: ") + v + "=" + std::to_string(*here) +
                                            " of " + std::to_string(size) +
                                            " ranks on this host: the job spans several hosts, "
                                            "and every nicoff card lives in one kernel");
    }
    if (const std::optional<std::uint32_t> hosts = env_value("SLURM_NNODES"); hosts && *hosts > 1)
        detail::throw_errno(EINVAL, "nicoff: SLURM_NNODES=" + std::to_string(*hosts) +
                                        ": the job spans several hosts, and every nicoff card "
                                        "lives in one kernel");
}

constexpr const char *job_id_vars[] = {"NICOFF_JOB_ID", "SLURM_JOB_ID", "OMPI_MCA_orte_ess_jobid",
                                       "PMIX_NAMESPACE"};

} // namespace

Job::Job(std::uint32_t rank, std::uint32_t size, std::uint32_t nics, std::uint32_t port_base,
         std::string id)
    : rank_(rank), size_(size), nics_(nics), port_base_(port_base), id_(std::move(id)) {
    if (size == 0 || size > job_value_max)
        detail::throw_errno(EINVAL, "nicoff: job size " + std::to_string(size) + " is not in [1, " +
                                        std::to_string(job_value_max) + "]");
    if (rank >= size)
        detail::throw_errno(EINVAL, "nicoff: rank " + std::to_string(rank) +
                                        " is not below the job size " + std::to_string(size));
    if (nics == 0 || nics > job_value_max)
        detail::throw_errno(EINVAL, "nicoff: a job needs >= 1 card, not " + std::to_string(nics));
    // The highest port of the job belongs to the last rank.
    (void)job_placement(size - 1, nics, port_base);
}

std::optional<DeviceInfo> Job::query_device() {
    try {
        return Device(0u).info();
    } catch (const std::system_error &e) {
        const int err = e.code().value();
        if (err == ENOENT || err == ENODEV || err == ENXIO)
            return std::nullopt;
        throw;
    }
}

Job Job::from_env() {
    // Rank and size: the first launcher whose rank variable is set.
    const Launcher *from = nullptr;
    for (const Launcher &l : launchers) {
        if (env(l.rank)) {
            from = &l;
            break;
        }
    }
    if (!from && env("NICOFF_SIZE"))
        detail::throw_errno(EINVAL, "nicoff: NICOFF_SIZE is set but NICOFF_RANK is not");

    std::uint32_t rank = 0, size = 1;
    if (from) {
        rank = parse_value(from->rank, *env(from->rank));
        const char *size_var = nullptr;
        for (const char *s : from->sizes)
            if (s && env(s)) {
                size_var = s;
                break;
            }
        if (!size_var) {
            std::string want = from->sizes[0];
            if (from->sizes[1])
                want += std::string(" or ") + from->sizes[1];
            detail::throw_errno(EINVAL, std::string("nicoff: ") + from->rank + " is set but " +
                                            want + " is not");
        }
        size = parse_value(size_var, *env(size_var));
        if (size == 0)
            detail::throw_errno(EINVAL, std::string("nicoff: ") + size_var +
                                            "=0: a job has at least one process");
        if (rank >= size)
            detail::throw_errno(EINVAL, std::string("nicoff: ") + from->rank + "=" +
                                            std::to_string(rank) + " is not below " + size_var +
                                            "=" + std::to_string(size));
    }

    check_one_host(size);

    // Parse every NICOFF_ variable before touching the device.
    const std::optional<std::uint32_t> nics_env = env_value("NICOFF_NICS");
    const std::optional<std::uint32_t> port_base_env = env_value("NICOFF_PORT_BASE");
    const std::optional<std::uint32_t> card_env = env_value("NICOFF_CARD");
    const std::optional<std::uint32_t> port_env = env_value("NICOFF_PORT");
    if (nics_env && *nics_env == 0)
        detail::throw_errno(EINVAL, "nicoff: NICOFF_NICS=0: a job needs >= 1 card");

    std::string id;
    for (const char *v : job_id_vars) {
        if (auto s = env(v)) {
            id = std::move(*s);
            break;
        }
    }

    std::uint32_t nics = size;
    if (nics_env) {
        nics = *nics_env;
    } else if (auto info = query_device(); info && info->num_cards > 0) {
        nics = std::min(info->num_cards, job_value_max);
    }
    const std::uint32_t port_base = port_base_env.value_or(default_port_base);

    Job job(rank, size, nics, port_base, std::move(id));
    job.source_ = from ? from->rank : "";
    const Placement mine = job.placement_of(rank);
    if (card_env && *card_env != mine.card)
        detail::throw_errno(EINVAL, "nicoff: NICOFF_CARD=" + std::to_string(*card_env) +
                                        " but rank " + std::to_string(rank) + " of " +
                                        std::to_string(size) + " over " + std::to_string(nics) +
                                        " cards is on card " + std::to_string(mine.card));
    if (port_env && *port_env != mine.port)
        detail::throw_errno(EINVAL, "nicoff: NICOFF_PORT=" + std::to_string(*port_env) +
                                        " but rank " + std::to_string(rank) + " of " +
                                        std::to_string(size) + " over " + std::to_string(nics) +
                                        " cards from port " + std::to_string(port_base) +
                                        " has port " + std::to_string(mine.port));
    return job;
}

Placement Job::placement_of(std::uint32_t r) const {
    if (r >= size_)
        detail::throw_errno(EINVAL, "nicoff: rank " + std::to_string(r) +
                                        " is not below the job size " + std::to_string(size_));
    return job_placement(r, nics_, port_base_);
}

Port Job::open_port(const PortConfig &rings) const {
    PortConfig cfg = rings;
    const Placement mine = placement_of(rank_);
    cfg.port = mine.port;
    return Port(mine.card, cfg);
}

} // namespace nicoff
