// How the ranks of a job started by Hydra agree on its identity and
// placement through the launcher's key-value space (see job.hpp, pmi.hpp).
#include "pmi.hpp"

#include "common.hpp"

#include <charconv>
#include <cstring>
#include <exception>

namespace nicoff::detail {

namespace {

// The one key of the job's space this library puts.
constexpr const char *job_key = "nicoff-job";
// Hydra's values stop at 1024 bytes.
constexpr std::size_t value_max = 1024;

// Values may hold no blanks or '=': free text travels as hex.
std::string hex(std::string_view s) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (const unsigned char c : s) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

std::optional<std::string> unhex(std::string_view s) {
    if (s.size() % 2)
        return std::nullopt;
    std::string out;
    for (std::size_t i = 0; i < s.size(); i += 2) {
        unsigned v = 0;
        const auto [p, ec] = std::from_chars(s.data() + i, s.data() + i + 2, v, 16);
        if (ec != std::errc() || p != s.data() + i + 2)
            return std::nullopt;
        out += static_cast<char>(v);
    }
    return out;
}

// The fields of "a:b:c...", split at ':'.
std::vector<std::string_view> fields(std::string_view v) {
    std::vector<std::string_view> out;
    for (;;) {
        const std::size_t c = v.find(':');
        out.push_back(v.substr(0, c));
        if (c == std::string_view::npos)
            return out;
        v.remove_prefix(c + 1);
    }
}

[[noreturn]] void bad_value(std::string_view v) {
    throw_errno(EPROTO, "nicoff: PMI: rank 0 published '" + std::string(v.substr(0, 80)) +
                            "' under " + job_key + ", which is not this library's");
}

// e.what() without the ": <strerror>" std::system_error appends, which
// the receiving ranks' error adds again.
std::string bare_what(const std::system_error &e) {
    std::string w = e.what();
    const std::string tail = ": " + e.code().message();
    if (w.size() > tail.size() && w.ends_with(tail))
        w.resize(w.size() - tail.size());
    return w;
}

} // namespace

std::string pmi_job_encode(const PmiJob &job) {
    std::string v = "v1:" + std::to_string(job.nics) + ":" + std::to_string(job.port_base) + ":" +
                    std::to_string(job.max_ports) + ":" + hex(job.id);
    if (v.size() > value_max)
        throw_errno(EINVAL, "nicoff: the job id (" + std::to_string(job.id.size()) +
                                " bytes) is too long for the launcher's key-value space");
    return v;
}

std::string pmi_job_encode_error(int err, const std::string &what) {
    // A long message is cut, not lost: the errno still travels.
    return "err:" + std::to_string(err) + ":" + hex(what.substr(0, value_max / 2 - 16));
}

PmiJob pmi_job_decode(std::string_view value) {
    const std::vector<std::string_view> f = fields(value);
    if (f.size() == 3 && f[0] == "err") {
        int err = 0;
        const auto [p, ec] = std::from_chars(f[1].data(), f[1].data() + f[1].size(), err);
        const std::optional<std::string> what = unhex(f[2]);
        if (ec != std::errc() || p != f[1].data() + f[1].size() || err <= 0 || !what)
            bad_value(value);
        throw_errno(err, "nicoff: rank 0 of the job could not set it up: " + *what);
    }
    if (f.size() != 5 || f[0] != "v1")
        bad_value(value);
    const std::optional<std::uint32_t> nics = parse_job_value(f[1]);
    const std::optional<std::uint32_t> base = parse_job_value(f[2]);
    const std::optional<std::uint32_t> max_ports = parse_job_value(f[3]);
    std::optional<std::string> id = unhex(f[4]);
    if (!nics || !base || !max_ports || !id || *nics == 0)
        bad_value(value);
    return {std::move(*id), *nics, *base, *max_ports};
}

namespace {

// The searches of a port base give up after this many rounds.
constexpr std::uint32_t port_rounds = 16;

// Each rank tries its port at the bases of a sequence the job id gives,
// the same on every rank but another for another job, until a round in
// which every rank got its own (see job.hpp).
std::uint32_t search_port_base(PmiClient &pmi, const std::string &kvs, std::uint32_t rank,
                               std::uint32_t size, const PmiJob &job, const PortHolder &hold,
                               std::unique_ptr<FileDesc> &held) {
    const std::uint64_t per_card = (std::uint64_t{size} + job.nics - 1) / job.nics;
    if (per_card + job.port_base > job.max_ports)
        throw_errno(EADDRINUSE, "nicoff: " + std::to_string(size) + " ranks over " +
                                    std::to_string(job.nics) + " cards need " +
                                    std::to_string(per_card) + " ports a card from port " +
                                    std::to_string(job.port_base) + ", and a card has " +
                                    std::to_string(job.max_ports));
    const std::uint32_t span =
        job.max_ports - static_cast<std::uint32_t>(per_card) - job.port_base + 1;
    for (std::uint32_t k = 0; k < std::min(span, port_rounds); k++) {
        const std::uint32_t base = job.port_base + job_group_id(job.id, k) % span;
        // Only a rank that did not get its port speaks; one key for all.
        const std::string busy = "nicoff-busy-" + std::to_string(k);
        std::string why = "1";
        try {
            held = hold(job_placement(rank, job.nics, base));
        } catch (const std::system_error &e) {
            why = pmi_job_encode_error(e.code().value(), bare_what(e));
        }
        if (!held)
            pmi.put(kvs, busy, why);
        pmi.barrier();
        const std::optional<std::string> v = pmi.get(kvs, busy);
        if (!v)
            return base;
        held.reset();
        if (*v != "1")
            (void)pmi_job_decode(*v); // the error a rank met: thrown on every rank
    }
    throw_errno(EADDRINUSE, "nicoff: in " + std::to_string(std::min(span, port_rounds)) +
                                " tries, no port base left every port of the job's " +
                                std::to_string(size) + " ranks free");
}

} // namespace

PmiJob pmi_agree(PmiClient &pmi, std::uint32_t rank, std::uint32_t size,
                 const std::function<PmiJob(const std::string &kvsname)> &decide,
                 const PortHolder &hold, std::unique_ptr<FileDesc> &held) {
    pmi.init();
    const std::string kvs = pmi.kvsname();
    if (rank == 0) {
        // Whatever happens, rank 0 publishes something: the others wait for
        // it, and should fail with rank 0's reason rather than a timeout.
        std::string value;
        try {
            value = pmi_job_encode(decide(kvs));
        } catch (const std::system_error &e) {
            value = pmi_job_encode_error(e.code().value(), bare_what(e));
        } catch (const std::exception &e) {
            value = pmi_job_encode_error(EIO, e.what());
        }
        pmi.put(kvs, job_key, value);
    }
    pmi.barrier();
    const std::optional<std::string> v = pmi.get(kvs, job_key);
    if (!v)
        throw_errno(EPROTO, std::string("nicoff: PMI: rank 0 published no ") + job_key +
                                " (does every rank of the job run a nicoff program?)");
    PmiJob job = pmi_job_decode(*v);
    if (job.max_ports) {
        job.port_base = search_port_base(pmi, kvs, rank, size, job, hold, held);
        job.max_ports = 0;
    }
    return job;
}

namespace {

// The process's one PMI session (see pmi_job()).
struct Session {
    std::optional<PmiClient> client;
    std::optional<PmiJob> job;
    // This rank's port, held from the search until open_port().
    std::unique_ptr<FileDesc> held;
    std::exception_ptr error;
    pid_t pid = 0;

    ~Session() {
        // Not in a forked child: the launcher knows only its parent.
        if (!client || pid != ::getpid() || client->broken())
            return;
        try {
            client->finalize();
        } catch (const std::exception &) {
            // An MPI library's MPI_Finalize has already said goodbye, and
            // the launcher closed the connection: nothing left to do.
        }
    }
};

Session &session() {
    static Session s;
    return s;
}

} // namespace

PmiJob pmi_job(int fd, std::chrono::milliseconds timeout, std::uint32_t rank, std::uint32_t size,
               const std::function<PmiJob(const std::string &kvsname)> &decide) {
    Session &s = session();
    if (s.job)
        return *s.job;
    // A second attempt would enter a barrier the other ranks have left.
    if (s.error)
        std::rethrow_exception(s.error);
    try {
        s.client.emplace(fd, timeout);
        s.pid = ::getpid();
        s.job = pmi_agree(*s.client, rank, size, decide, hold_port, s.held);
    } catch (...) {
        s.error = std::current_exception();
        throw;
    }
    return *s.job;
}

void pmi_release_port() noexcept { session().held.reset(); }

std::unique_ptr<FileDesc> hold_port(Placement where) {
    DeviceInfo info;
    auto fd = std::make_unique<FileDesc>(open_device(Device(where.card).path(), info));
    nicoff_port_open po{};
    po.abi_version = NICOFF_ABI_VERSION;
    po.port = where.port;
    po.cmd_entries = 2;
    po.cq_entries = 2;
    const int err = do_ioctl(fd->fd, NICOFF_IOC_PORT_OPEN, &po);
    if (err == EADDRINUSE)
        return nullptr;
    if (err)
        throw_errno(err, "nicoff: trying port " + std::to_string(where.port) + " of card " +
                             std::to_string(where.card));
    return fd;
}

} // namespace nicoff::detail
