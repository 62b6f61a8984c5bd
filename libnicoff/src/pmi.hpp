// A client of the PMI-1 "simple" wire protocol: the launcher's key-value
// space as MPICH's Hydra (mpiexec) offers it on the socket PMI_FD names.
// Job::from_env() uses it so that the ranks of a job started by mpiexec
// agree on the job's identity and placement (see job.hpp).
//
// The protocol is lines of space-separated key=value pairs, the first one
// cmd=...; every request gets exactly one line back.  This client reads a
// reply byte by byte up to its newline, never beyond: an MPI library in
// the same process speaks on the same socket, and whatever follows our
// reply is not ours.  It is not thread-safe, and must not run while
// another thread of the process uses PMI.
#ifndef NICOFF_SRC_PMI_HPP
#define NICOFF_SRC_PMI_HPP

#include <nicoff/nicoff.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nicoff::detail {

// The pairs of one protocol line (without its newline); EPROTO for a
// field without '=', an empty key or no cmd= first.
std::map<std::string, std::string, std::less<>> pmi_parse(std::string_view line);

class PmiClient {
public:
    // Speaks on a dup() of fd (the caller keeps fd), waiting at most
    // timeout for each reply.
    PmiClient(int fd, std::chrono::milliseconds timeout);
    PmiClient(const PmiClient &) = delete;
    PmiClient &operator=(const PmiClient &) = delete;
    ~PmiClient();

    // Each throws std::system_error: ETIMEDOUT after the timeout,
    // ECONNRESET if the launcher closes the socket, EPROTO for a reply
    // that is not the one asked for or says rc != 0 (its msg= quoted).
    void init();
    std::string kvsname();
    // key and value: no blanks, no '=' (EINVAL).
    void put(const std::string &kvs, const std::string &key, const std::string &value);
    // Every rank of the job calls it, in the same order as every other
    // PMI call; the puts before it are visible to gets after it.
    void barrier();
    // nullopt when the launcher has no such key (rc != 0 in its reply).
    std::optional<std::string> get(const std::string &kvs, const std::string &key);
    // The launcher closes the connection after it: nothing more may be sent.
    void finalize();

    // After any error the connection is out of step (a reply may still
    // come) and every further request throws EPROTO.
    bool broken() const noexcept { return broken_; }

private:
    std::map<std::string, std::string, std::less<>> request(const std::string &line,
                                                            std::string_view want);
    void send_line(const std::string &line);
    std::string read_line(std::string_view after);

    int fd_ = -1;
    std::chrono::milliseconds timeout_;
    bool broken_ = false;
};

// --- a job's agreement (job_pmi.cpp) -----------------------------------------

struct FileDesc;

// What rank 0 of a job under PMI decides for all (see job.hpp).  max_ports
// 0: port_base is the job's; else the ranks search a base from port_base,
// below max_ports (the card's ports).
struct PmiJob {
    std::string id;
    std::uint32_t nics = 0;
    std::uint32_t port_base = 0;
    std::uint32_t max_ports = 0;
};

// The value rank 0 publishes: its decision, or the error that kept it from
// deciding (errno and message), so that no rank waits for what will not come.
std::string pmi_job_encode(const PmiJob &job);
std::string pmi_job_encode_error(int err, const std::string &what);
// Back; a published error is thrown as a std::system_error of that errno,
// anything malformed as EPROTO.
PmiJob pmi_job_decode(std::string_view value);

// Opens and so holds a port of a card: nullptr if it is in use
// (EADDRINUSE), any other error thrown.
using PortHolder = std::function<std::unique_ptr<FileDesc>(const Placement &)>;
std::unique_ptr<FileDesc> hold_port(Placement where);

// init, get_my_kvsname, rank 0: decide(kvsname) and put, barrier, get.
// When rank 0 leaves the port base to a search, rounds follow: each rank
// holds its own port at the round's base, one that could not says so, a
// barrier, and a get tells all whether the round made it; the last
// round's port stays in held.  Every rank of the job must call it, once.
// An error of decide() or of a hold is published, then thrown on every
// rank.
PmiJob pmi_agree(PmiClient &pmi, std::uint32_t rank, std::uint32_t size,
                 const std::function<PmiJob(const std::string &kvsname)> &decide,
                 const PortHolder &hold, std::unique_ptr<FileDesc> &held);

// This process's agreement: made by pmi_agree() over fd at the first
// call, returned again by every later call (whose arguments go unused).
// The connection stays open until the process exits, then gets its
// finalize (Hydra kills a job whose process leaves without one); a
// finalize already sent by an MPI library in the process is no error.
PmiJob pmi_job(int fd, std::chrono::milliseconds timeout, std::uint32_t rank, std::uint32_t size,
               const std::function<PmiJob(const std::string &kvsname)> &decide);

// Lets go of the port the search held, for open_port() to open it.
void pmi_release_port() noexcept;

} // namespace nicoff::detail

#endif // NICOFF_SRC_PMI_HPP
