// The PMI-1 wire protocol client (see pmi.hpp).
#include "pmi.hpp"

#include "common.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fcntl.h>

namespace nicoff::detail {

namespace {

// Hydra's replies are a few hundred bytes (its values stop at 1024); a
// longer line means we are not talking to a PMI server.
constexpr std::size_t line_max = 4096;

bool plain_token(std::string_view s) {
    return !s.empty() && s.find_first_of(" \t\n=") == std::string_view::npos;
}

} // namespace

std::map<std::string, std::string, std::less<>> pmi_parse(std::string_view line) {
    std::map<std::string, std::string, std::less<>> out;
    bool first = true;
    while (!line.empty()) {
        const std::string_view field = take_field(line, ' ');
        if (field.empty())
            continue;
        const std::size_t eq = field.find('=');
        if (eq == 0 || eq == std::string_view::npos)
            throw_errno(EPROTO, "nicoff: PMI: malformed field '" + std::string(field) + "'");
        const std::string_view key = field.substr(0, eq);
        if (first && key != "cmd")
            throw_errno(EPROTO, "nicoff: PMI: a reply without cmd= first");
        first = false;
        out.insert_or_assign(std::string(key), std::string(field.substr(eq + 1)));
    }
    if (first)
        throw_errno(EPROTO, "nicoff: PMI: an empty reply");
    return out;
}

PmiClient::PmiClient(int fd, std::chrono::milliseconds timeout) : timeout_(timeout) {
    fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (fd_ < 0)
        throw_errno(errno, "nicoff: PMI_FD=" + std::to_string(fd) + " is not an open file");
}

PmiClient::~PmiClient() { ::close(fd_); }

void PmiClient::send_line(const std::string &line) {
    const std::string msg = line + "\n";
    std::size_t done = 0;
    while (done < msg.size()) {
        // MSG_NOSIGNAL: a launcher gone must be an error, not SIGPIPE.
        ssize_t n = ::send(fd_, msg.data() + done, msg.size() - done, MSG_NOSIGNAL);
        if (n < 0 && errno == ENOTSOCK)
            n = ::write(fd_, msg.data() + done, msg.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            broken_ = true;
            const int err = errno == EPIPE ? ECONNRESET : errno;
            throw_errno(err, "nicoff: PMI: sending '" + line + "'");
        }
        done += static_cast<std::size_t>(n);
    }
}

std::string PmiClient::read_line(std::string_view after) {
    using clock = std::chrono::steady_clock;
    const clock::time_point deadline = clock::now() + timeout_;
    std::string line;
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
        pollfd p{fd_, POLLIN, 0};
        const int r = ::poll(&p, 1, static_cast<int>(std::max<long long>(left.count(), 0)));
        if (r < 0 && errno == EINTR)
            continue;
        broken_ = true; // until the whole line is in
        if (r < 0)
            throw_errno(errno, "nicoff: PMI: waiting for the reply to " + std::string(after));
        if (r == 0)
            throw_errno(ETIMEDOUT, "nicoff: PMI: no reply to " + std::string(after) + " within " +
                                       std::to_string(timeout_.count()) + " ms");
        char c = 0;
        const ssize_t n = ::read(fd_, &c, 1);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0)
            throw_errno(errno, "nicoff: PMI: reading the reply to " + std::string(after));
        if (n == 0)
            throw_errno(ECONNRESET, "nicoff: PMI: the launcher closed the connection before "
                                    "replying to " +
                                        std::string(after));
        if (c == '\n') {
            broken_ = false;
            return line;
        }
        if (line.size() >= line_max)
            throw_errno(EPROTO, "nicoff: PMI: the reply to " + std::string(after) +
                                    " is longer than " + std::to_string(line_max) + " bytes");
        line += c;
    }
}

std::map<std::string, std::string, std::less<>> PmiClient::request(const std::string &line,
                                                                   std::string_view want) {
    if (broken_)
        throw_errno(EPROTO, "nicoff: PMI: the connection is out of step after an earlier error");
    const std::string cmd = line.substr(0, line.find(' '));
    send_line(line);
    const std::string reply = read_line(cmd);
    try {
        auto f = pmi_parse(reply);
        if (f["cmd"] != want)
            throw_errno(EPROTO, "nicoff: PMI: '" + reply + "' in reply to " + cmd);
        return f;
    } catch (...) {
        broken_ = true;
        throw;
    }
}

namespace {

// rc=0 or no rc at all (barrier_out has none).
void check_rc(const std::map<std::string, std::string, std::less<>> &f, const std::string &cmd) {
    const auto rc = f.find("rc");
    if (rc == f.end() || rc->second == "0")
        return;
    const auto msg = f.find("msg");
    throw_errno(EPROTO, "nicoff: PMI: " + cmd + " failed: rc=" + rc->second +
                            (msg != f.end() ? " msg=" + msg->second : std::string()));
}

} // namespace

void PmiClient::init() {
    const auto f = request("cmd=init pmi_version=1 pmi_subversion=1", "response_to_init");
    check_rc(f, "cmd=init");
    const auto v = f.find("pmi_version");
    if (v == f.end() || v->second != "1") {
        broken_ = true;
        throw_errno(EPROTO, "nicoff: PMI: the launcher does not speak PMI version 1");
    }
}

std::string PmiClient::kvsname() {
    const auto f = request("cmd=get_my_kvsname", "my_kvsname");
    check_rc(f, "cmd=get_my_kvsname");
    const auto k = f.find("kvsname");
    if (k == f.end() || k->second.empty())
        throw_errno(EPROTO, "nicoff: PMI: my_kvsname without a kvsname");
    return k->second;
}

void PmiClient::put(const std::string &kvs, const std::string &key, const std::string &value) {
    if (!plain_token(kvs) || !plain_token(key) || !plain_token(value))
        throw_errno(EINVAL, "nicoff: PMI: put of '" + key + "': blanks or '=' in a field");
    check_rc(request("cmd=put kvsname=" + kvs + " key=" + key + " value=" + value, "put_result"),
             "put of " + key);
}

void PmiClient::barrier() { check_rc(request("cmd=barrier_in", "barrier_out"), "cmd=barrier_in"); }

std::optional<std::string> PmiClient::get(const std::string &kvs, const std::string &key) {
    if (!plain_token(kvs) || !plain_token(key))
        throw_errno(EINVAL, "nicoff: PMI: get of '" + key + "': blanks or '=' in a field");
    const auto f = request("cmd=get kvsname=" + kvs + " key=" + key, "get_result");
    const auto rc = f.find("rc");
    if (rc != f.end() && rc->second != "0")
        return std::nullopt;
    const auto v = f.find("value");
    if (v == f.end())
        throw_errno(EPROTO, "nicoff: PMI: get_result of " + key + " without a value");
    return v->second;
}

void PmiClient::finalize() {
    check_rc(request("cmd=finalize", "finalize_ack"), "cmd=finalize");
    broken_ = true; // the launcher has closed its end
}

} // namespace nicoff::detail
