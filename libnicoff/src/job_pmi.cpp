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
    std::string v =
        "v1:" + std::to_string(job.nics) + ":" + std::to_string(job.port_base) + ":" + hex(job.id);
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
    if (f.size() != 4 || f[0] != "v1")
        bad_value(value);
    const std::optional<std::uint32_t> nics = parse_job_value(f[1]);
    const std::optional<std::uint32_t> base = parse_job_value(f[2]);
    std::optional<std::string> id = unhex(f[3]);
    if (!nics || !base || !id || *nics == 0)
        bad_value(value);
    return {std::move(*id), *nics, *base, {}};
}

PmiJob pmi_agree(PmiClient &pmi, std::uint32_t rank,
                 const std::function<PmiJob(const std::string &kvsname)> &decide) {
    pmi.init();
    const std::string kvs = pmi.kvsname();
    // Rank 0 holds the ports it chose until every rank has read its choice.
    PmiJob decided;
    if (rank == 0) {
        // Whatever happens, rank 0 publishes something: the others wait for
        // it, and should fail with rank 0's reason rather than a timeout.
        std::string value;
        try {
            decided = decide(kvs);
            value = pmi_job_encode(decided);
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
    return pmi_job_decode(*v);
}

namespace {

// The process's one PMI session (see pmi_job()).
struct Session {
    std::optional<PmiClient> client;
    std::optional<PmiJob> job;
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

PmiJob pmi_job(int fd, std::chrono::milliseconds timeout, std::uint32_t rank,
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
        s.job = pmi_agree(*s.client, rank, decide);
    } catch (...) {
        s.error = std::current_exception();
        throw;
    }
    return *s.job;
}

namespace {

// The port, open and so held, or nullptr if it is in use.  The rings are
// not mapped: closing the file frees the port at once.
std::unique_ptr<FileDesc> hold_port(std::uint32_t card, std::uint32_t port) {
    DeviceInfo info;
    auto fd = std::make_unique<FileDesc>(open_device(Device(card).path(), info));
    nicoff_port_open po{};
    po.abi_version = NICOFF_ABI_VERSION;
    po.port = port;
    po.cmd_entries = 2;
    po.cq_entries = 2;
    const int err = do_ioctl(fd->fd, NICOFF_IOC_PORT_OPEN, &po);
    if (err == EADDRINUSE)
        return nullptr;
    if (err)
        throw_errno(err, "nicoff: trying port " + std::to_string(port) + " of card " +
                             std::to_string(card));
    return fd;
}

} // namespace

PortBase pmi_port_base(const std::string &id, std::uint32_t size, std::uint32_t nics,
                       std::uint32_t first, std::uint32_t max_ports) {
    const std::uint64_t per_card = (std::uint64_t{size} + nics - 1) / nics;
    if (per_card + first > max_ports)
        throw_errno(EADDRINUSE,
                    "nicoff: " + std::to_string(size) + " ranks over " + std::to_string(nics) +
                        " cards need " + std::to_string(per_card) + " ports a card from port " +
                        std::to_string(first) + ", and a card has " + std::to_string(max_ports));
    const std::uint32_t span = max_ports - static_cast<std::uint32_t>(per_card) - first + 1;
    // Jobs starting together each start their search elsewhere, by id; and
    // while one holds a base's ports the others' search passes them by.
    const std::uint32_t start = job_group_id(id, 0) % span;
    for (std::uint32_t k = 0; k < span; k++) {
        PortBase b{first + (start + k) % span, {}};
        for (std::uint32_t r = 0; r < size; r++) {
            const Placement p = job_placement(r, nics, b.base);
            std::unique_ptr<FileDesc> fd = hold_port(p.card, p.port);
            if (!fd)
                break;
            b.held.push_back(std::move(fd));
        }
        if (b.held.size() == size)
            return b;
    }
    throw_errno(EADDRINUSE, "nicoff: no port base from " + std::to_string(first) +
                                " leaves the job's " + std::to_string(size) + " ports free on " +
                                std::to_string(nics) + " cards");
}

} // namespace nicoff::detail
