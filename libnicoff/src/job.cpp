// nicoff::Job: the job environment of nicoffrun or of an MPI launcher.
#include "common.hpp"
#include "pmi.hpp"

#include <sys/random.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
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

// How long a rank waits for each PMI reply, the barrier's included (ranks
// may reach it minutes apart on a loaded host).
constexpr std::uint32_t pmi_timeout_default = 300;

// K when NICOFF_NICS does not say: the cards of /dev/nicoff0 (info: its
// QUERY), else the job size.
std::uint32_t nics_of(const std::optional<DeviceInfo> &info, std::uint32_t size) {
    if (info && info->num_cards > 0)
        return std::min(info->num_cards, job_value_max);
    return size;
}

// Rank 0's decision for a job under Hydra (see job.hpp): its own NICOFF_
// variables, else an id no other job has, its cards, a free port base.
detail::PmiJob decide_under_pmi(const std::string &kvsname, std::uint32_t size,
                                std::optional<std::uint32_t> nics_env,
                                std::optional<std::uint32_t> port_base_env) {
    detail::PmiJob job;
    if (auto id = env("NICOFF_JOB_ID")) {
        job.id = std::move(*id);
    } else {
        // Hydra's kvsname names the mpiexec (its pid, a random number, the
        // host); 64 random bits of rank 0 make the id differ between any
        // two jobs, those of separate mpiexec runs reusing a pid included.
        std::uint64_t r = 0;
        if (getrandom(&r, sizeof(r), 0) != static_cast<ssize_t>(sizeof(r)))
            r = static_cast<std::uint64_t>(
                    std::chrono::steady_clock::now().time_since_epoch().count()) ^
                static_cast<std::uint64_t>(::getpid());
        char tail[17];
        std::snprintf(tail, sizeof(tail), "%016llx", static_cast<unsigned long long>(r));
        job.id = kvsname + "." + tail;
    }
    const std::optional<DeviceInfo> info =
        nics_env && port_base_env ? std::nullopt : Job::query_device();
    job.nics = nics_env ? *nics_env : nics_of(info, size);
    // With a device, the ranks search a base at which each gets its port.
    if (port_base_env) {
        job.port_base = *port_base_env;
    } else {
        job.port_base = default_port_base;
        if (info)
            job.max_ports = info->max_ports;
    }
    return job;
}

// A rank's own NICOFF_ variable must say what rank 0 decided.
void check_agrees(const char *name, const std::string &mine, const std::string &agreed) {
    if (mine != agreed)
        detail::throw_errno(EINVAL, std::string("nicoff: ") + name + "=" + mine +
                                        " on this rank, but rank 0 of the job decided " + agreed);
}

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
    std::uint32_t nics = size;
    std::uint32_t port_base = port_base_env.value_or(default_port_base);
    std::optional<std::string> pmi_fd;
    if (from && std::string_view(from->rank) == "PMI_RANK")
        pmi_fd = env("PMI_FD");
    if (pmi_fd) {
        // Under Hydra: what rank 0 decided, the same on every rank.
        const std::uint32_t fd = parse_value("PMI_FD", *pmi_fd);
        const std::optional<std::uint32_t> secs = env_value("NICOFF_PMI_TIMEOUT");
        if (secs && *secs == 0)
            detail::throw_errno(EINVAL, "nicoff: NICOFF_PMI_TIMEOUT=0: the bound is >= 1 s");
        const detail::PmiJob agreed = detail::pmi_job(
            static_cast<int>(fd), std::chrono::seconds(secs.value_or(pmi_timeout_default)), rank,
            size, [&](const std::string &kvsname) {
                return decide_under_pmi(kvsname, size, nics_env, port_base_env);
            });
        if (auto mine = env("NICOFF_JOB_ID"))
            check_agrees("NICOFF_JOB_ID", *mine, agreed.id);
        if (nics_env)
            check_agrees("NICOFF_NICS", std::to_string(*nics_env), std::to_string(agreed.nics));
        if (port_base_env)
            check_agrees("NICOFF_PORT_BASE", std::to_string(*port_base_env),
                         std::to_string(agreed.port_base));
        id = agreed.id;
        nics = agreed.nics;
        port_base = agreed.port_base;
    } else {
        for (const char *v : job_id_vars) {
            if (auto s = env(v)) {
                id = std::move(*s);
                break;
            }
        }
        nics = nics_env ? *nics_env : nics_of(Job::query_device(), size);
    }

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
    // Under Hydra this rank may hold its port since the agreement.
    detail::pmi_release_port();
    PortConfig cfg = rings;
    const Placement mine = placement_of(rank_);
    cfg.port = mine.port;
    return Port(mine.card, cfg);
}

} // namespace nicoff
