// nicoffrun: starts the N processes of a nicoff job on this machine.
//
//   nicoffrun -n N [--nics K] [--port-base P] [--job-id ID] [--timeout SECS]
//             [--grace SECS] [--] prog [args...]
//
// Each rank r in [0, N) runs prog with, in its environment (see
// <nicoff/job.hpp>, which reads it back as nicoff::Job::from_env()):
//   NICOFF_RANK=r  NICOFF_SIZE=N  NICOFF_JOB_ID=ID  NICOFF_NICS=K
//   NICOFF_PORT_BASE=P  NICOFF_CARD=r % K  NICOFF_PORT=P + r / K
// K defaults to num_cards of /dev/nicoff0 (NICOFF_IOC_QUERY), or to N when
// there is no /dev/nicoff0 (so the launcher also runs where the module is
// not loaded, one card per rank); P defaults to 16; ID defaults to
// "<launcher pid>-<unix time>".  When /dev/nicoff0 answers, K must not
// exceed its num_cards and every port must be below its max_ports.
//
// Processes: each rank is the leader of a process group of its own, so a
// signal to the rank reaches whatever it started too.  Its stdin is
// /dev/null; its stdout and stderr are pipes that the launcher reads with
// poll() and forwards line by line to its own stdout and stderr, each line
// prefixed with "[r] " and written with one write(), so lines of different
// ranks never mix.  A last line without a newline is forwarded (with one)
// when its pipe closes; a line longer than 1 MiB is forwarded in 1 MiB
// pieces, each a line of its own.
//
// Ending: the launcher waits for every rank.  It exits 0 only when all of
// them exited 0.  The first rank to exit non-zero or be killed by a signal
// is reported on stderr; the launcher then sends SIGTERM to every rank's
// process group, SIGKILL after the grace period (--grace, default 2 s), and
// exits with that rank's status, or 128 + the signal that killed it.
// --timeout SECS does the same after SECS seconds and exits 124.  SIGINT,
// SIGTERM and SIGHUP to the launcher are forwarded to every rank's group
// (a second one kills at once; SIGKILL after the grace period otherwise)
// and the launcher exits 128 + that signal unless a rank failed first;
// losing its own stdout or stderr (EPIPE) counts as SIGPIPE.  When every
// rank has exited, processes they left behind that still hold a pipe open
// are terminated the same way.  Should the launcher itself die, even of
// SIGKILL, its ranks get SIGKILL (PR_SET_PDEATHSIG; what they started does
// not).  Usage errors exit 2, a program that cannot be found 127 (126 when
// it cannot be executed), other launcher errors 1.
#include <nicoff/nicoff.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t max_line = 1u << 20;
constexpr std::size_t read_chunk = 64u << 10;
// How long pipes may stay open after the last SIGKILL before they are
// closed anyway (a process that left the rank's group may hold them).
constexpr auto pipe_linger = std::chrono::seconds(1);

constexpr const char *usage_text =
    "usage: nicoffrun -n N [--nics K] [--port-base P] [--job-id ID] [--timeout SECS]\n"
    "                 [--grace SECS] [--] prog [args...]\n"
    "Starts N processes of prog, rank r on card r %% K and port P + r / K.\n"
    "  -n, --np N        number of processes (ranks), >= 1\n"
    "  --nics K          cards to spread the ranks over (default: num_cards of\n"
    "                    /dev/nicoff0, or N without a device)\n"
    "  --port-base P     port of the first rank on each card (default %u)\n"
    "  --job-id ID       NICOFF_JOB_ID (default: <launcher pid>-<unix time>)\n"
    "  --timeout SECS    kill the job and exit 124 after SECS seconds\n"
    "  --grace SECS      SIGTERM to SIGKILL delay when killing (default 2)\n"
    "  -h, --help        this text\n"
    "  -V, --version     the nicoff version\n"
    "Each rank gets NICOFF_RANK, NICOFF_SIZE, NICOFF_JOB_ID, NICOFF_NICS,\n"
    "NICOFF_PORT_BASE, NICOFF_CARD and NICOFF_PORT; its output lines are\n"
    "prefixed with \"[rank] \".  Exit status: 0 when every rank exits 0, else\n"
    "that of the first rank to fail (128 + signal if killed), 124 on timeout,\n"
    "2 on usage errors.\n";

// --- output ------------------------------------------------------------------

// Writes everything, waiting out EINTR and EAGAIN (a non-blocking stdout we
// inherited).  False on any other error (EPIPE: nobody reads any more).
bool write_all(int fd, std::string_view s) {
    while (!s.empty()) {
        const ssize_t n = ::write(fd, s.data(), s.size());
        if (n >= 0) {
            s.remove_prefix(static_cast<std::size_t>(n));
            continue;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN) {
            pollfd p{fd, POLLOUT, 0};
            ::poll(&p, 1, -1);
            continue;
        }
        return false;
    }
    return true;
}

void say(const std::string &msg) { write_all(STDERR_FILENO, "nicoffrun: " + msg + "\n"); }

[[noreturn]] void usage_error(const std::string &msg) {
    say(msg);
    write_all(STDERR_FILENO, "Try 'nicoffrun --help'.\n");
    std::exit(2);
}

// --- options -------------------------------------------------------------------

struct Options {
    std::uint32_t n = 0;
    std::optional<std::uint32_t> nics;
    std::uint32_t port_base = nicoff::default_port_base;
    std::optional<std::string> job_id;
    std::optional<double> timeout;
    double grace = 2.0;
    std::vector<char *> argv; // prog and its arguments
};

std::uint32_t parse_count(const char *opt, const char *s, std::uint32_t min) {
    const std::optional<std::uint32_t> v = nicoff::parse_job_value(s);
    if (!v || *v < min)
        usage_error(std::string(opt) + " wants a whole number in [" + std::to_string(min) + ", " +
                    std::to_string(nicoff::job_value_max) + "], not '" + s + "'");
    return *v;
}

double parse_seconds(const char *opt, const char *s, bool zero_ok) {
    char *end = nullptr;
    errno = 0;
    const double v = std::strtod(s, &end);
    if (!*s || *end || errno || !std::isfinite(v) || v < 0 || (v == 0 && !zero_ok) || v > 1e7)
        usage_error(std::string(opt) + " wants a number of seconds" + (zero_ok ? " >= 0" : " > 0") +
                    ", not '" + s + "'");
    return v;
}

Options parse_options(int argc, char **argv) {
    enum { opt_nics = 1000, opt_port_base, opt_job_id, opt_timeout, opt_grace };
    static const option longopts[] = {
        {"np", required_argument, nullptr, 'n'},
        {"nics", required_argument, nullptr, opt_nics},
        {"port-base", required_argument, nullptr, opt_port_base},
        {"job-id", required_argument, nullptr, opt_job_id},
        {"timeout", required_argument, nullptr, opt_timeout},
        {"grace", required_argument, nullptr, opt_grace},
        {"help", no_argument, nullptr, 'h'},
        {"version", no_argument, nullptr, 'V'},
        {nullptr, 0, nullptr, 0},
    };
    Options o;
    bool have_n = false;
    opterr = 0;
    int c;
    // "+": options end at the program's name.
    while ((c = getopt_long(argc, argv, "+:n:hV", longopts, nullptr)) != -1) {
        switch (c) {
        case 'n':
            o.n = parse_count("-n", optarg, 1);
            have_n = true;
            break;
        case opt_nics:
            o.nics = parse_count("--nics", optarg, 1);
            break;
        case opt_port_base:
            o.port_base = parse_count("--port-base", optarg, 0);
            break;
        case opt_job_id:
            if (!*optarg)
                usage_error("--job-id wants a non-empty identifier");
            o.job_id = optarg;
            break;
        case opt_timeout:
            o.timeout = parse_seconds("--timeout", optarg, false);
            break;
        case opt_grace:
            o.grace = parse_seconds("--grace", optarg, true);
            break;
        case 'h':
            std::printf(usage_text, nicoff::default_port_base);
            std::exit(0);
        case 'V':
            std::printf("nicoffrun %s\n", NICOFF_VERSION_STRING);
            std::exit(0);
        case ':':
            usage_error(std::string("option ") + argv[optind - 1] + " wants a value");
        default:
            usage_error(std::string("unknown option ") + argv[optind - 1]);
        }
    }
    if (!have_n)
        usage_error("-n N is required");
    if (optind >= argc)
        usage_error("no program to run");
    o.argv.assign(argv + optind, argv + argc);
    o.argv.push_back(nullptr);
    return o;
}

// --- the program -----------------------------------------------------------------

bool executable_file(const std::string &path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
           ::access(path.c_str(), X_OK) == 0;
}

// prog as execvp() would find it; exits 127 when it is nowhere.
std::string resolve_program(const std::string &prog) {
    if (prog.find('/') != std::string::npos)
        return prog;
    const char *path = std::getenv("PATH");
    const std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
    std::size_t start = 0;
    for (;;) {
        const std::size_t end = dirs.find(':', start);
        std::string dir = dirs.substr(start, end == std::string::npos ? end : end - start);
        const std::string cand = (dir.empty() ? std::string(".") : dir) + "/" + prog;
        if (executable_file(cand))
            return cand;
        if (end == std::string::npos)
            break;
        start = end + 1;
    }
    say(prog + ": command not found");
    std::exit(127);
}

// --- ranks -------------------------------------------------------------------------

struct Stream {
    int fd = -1;    // read end; -1 once closed
    int out_fd = 1; // where its lines go
    std::string buf;
};

struct Rank {
    pid_t pid = -1;
    bool exited = false; // status known; the zombie stays until the end
    int status = 0;      // waitid() si_code/si_status folded as for waitpid()
    Stream streams[2];   // stdout, stderr
};

std::string describe(int status) {
    if (WIFEXITED(status))
        return "exited with status " + std::to_string(WEXITSTATUS(status));
    const int sig = WTERMSIG(status);
    const char *name = ::strsignal(sig);
    return "was killed by signal " + std::to_string(sig) + " (" + (name ? name : "?") + ")" +
           (WCOREDUMP(status) ? ", core dumped" : "");
}

std::string seconds(double s) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g", s);
    return buf;
}

int exit_code_of(int status) {
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class Launcher {
public:
    Launcher(const Options &o, std::uint32_t nics, std::string job_id)
        : opt_(o), nics_(nics), job_id_(std::move(job_id)), ranks_(o.n) {}

    int run();

private:
    void setup();
    bool spawn(std::uint32_t r, const std::string &path);
    std::vector<std::string> environment(std::uint32_t r) const;
    void signal_all(int sig);
    void begin_kill(Clock::time_point now);
    void check_children();
    void on_signal(int sig, Clock::time_point now);
    bool read_stream(std::uint32_t r, Stream &s);
    void drain_all();
    void emit(Stream &s, std::uint32_t r, std::string_view line);
    void flush_out(int fd);
    void close_stream(std::uint32_t r, Stream &s);
    bool all_exited() const;
    bool any_stream_open() const;
    void lost_output();

    const Options &opt_;
    const std::uint32_t nics_;
    const std::string job_id_;
    std::vector<Rank> ranks_;
    int sigfd_ = -1;
    int devnull_ = -1;
    sigset_t old_mask_;
    rlimit old_nofile_{};
    std::string pending_[3]; // per output fd (1, 2), written after each batch

    std::optional<int> result_; // the exit code, once decided
    int interrupted_ = 0;       // the signal that interrupted the launcher
    enum { running, term_sent, kill_sent } kill_state_ = running;
    Clock::time_point kill_at_;  // SIGKILL due (term_sent)
    Clock::time_point close_at_; // pipes closed anyway (kill_sent)
    bool out_lost_[3] = {};
};

void Launcher::setup() {
    // Two pipes per rank: raise the open-file limit as far as we may (the
    // ranks get the old one back).
    ::getrlimit(RLIMIT_NOFILE, &old_nofile_);
    rlimit raised = old_nofile_;
    raised.rlim_cur = raised.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &raised);

    sigset_t mask;
    sigemptyset(&mask);
    for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP})
        sigaddset(&mask, sig);
    if (::sigprocmask(SIG_BLOCK, &mask, &old_mask_) != 0 ||
        (sigfd_ = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
        throw std::system_error(errno, std::generic_category(), "signalfd");
    // A closed stdout is an EPIPE from write(), handled like SIGPIPE.
    ::signal(SIGPIPE, SIG_IGN);
    devnull_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull_ < 0)
        throw std::system_error(errno, std::generic_category(), "/dev/null");
}

std::vector<std::string> Launcher::environment(std::uint32_t r) const {
    static constexpr std::string_view ours[] = {
        "NICOFF_RANK=",      "NICOFF_SIZE=", "NICOFF_JOB_ID=", "NICOFF_NICS=",
        "NICOFF_PORT_BASE=", "NICOFF_CARD=", "NICOFF_PORT=",
    };
    std::vector<std::string> env;
    for (char **e = environ; *e; e++) {
        const std::string_view v(*e);
        if (std::none_of(std::begin(ours), std::end(ours),
                         [&](std::string_view p) { return v.starts_with(p); }))
            env.emplace_back(v);
    }
    const nicoff::Placement p = nicoff::job_placement(r, nics_, opt_.port_base);
    env.push_back("NICOFF_RANK=" + std::to_string(r));
    env.push_back("NICOFF_SIZE=" + std::to_string(opt_.n));
    env.push_back("NICOFF_JOB_ID=" + job_id_);
    env.push_back("NICOFF_NICS=" + std::to_string(nics_));
    env.push_back("NICOFF_PORT_BASE=" + std::to_string(opt_.port_base));
    env.push_back("NICOFF_CARD=" + std::to_string(p.card));
    env.push_back("NICOFF_PORT=" + std::to_string(p.port));
    return env;
}

// An owned file descriptor.
struct Fd {
    int fd = -1;
    Fd() = default;
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    ~Fd() { reset(); }
    void reset() {
        if (fd >= 0)
            ::close(fd);
        fd = -1;
    }
    int release() { return std::exchange(fd, -1); }
};

bool make_pipe(Fd &rd, Fd &wr) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0)
        return false;
    rd.fd = p[0];
    wr.fd = p[1];
    return true;
}

// Forks and execs rank r.  False (with result_ set and a message said)
// when it could not be started.
bool Launcher::spawn(std::uint32_t r, const std::string &path) {
    const std::vector<std::string> env = environment(r);
    std::vector<char *> envp;
    for (const std::string &e : env)
        envp.push_back(const_cast<char *>(e.c_str()));
    envp.push_back(nullptr);

    Fd out_rd, out_wr, err_rd, err_wr, st_rd, st_wr;
    const pid_t self = ::getpid();
    pid_t pid = -1;
    if (make_pipe(out_rd, out_wr) && make_pipe(err_rd, err_wr) && make_pipe(st_rd, st_wr))
        pid = ::fork();
    if (pid == 0) {
        // The child: async-signal-safe calls only.
        ::setpgid(0, 0);
        // Dies with the launcher, even a SIGKILLed one.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != self)
            ::_exit(127);
        ::dup2(devnull_, STDIN_FILENO);
        ::dup2(out_wr.fd, STDOUT_FILENO);
        ::dup2(err_wr.fd, STDERR_FILENO);
        ::signal(SIGPIPE, SIG_DFL);
        ::setrlimit(RLIMIT_NOFILE, &old_nofile_);
        ::sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
        ::execve(path.c_str(), opt_.argv.data(), envp.data());
        const int e = errno;
        (void)!::write(st_wr.fd, &e, sizeof(e));
        ::_exit(127);
    }
    if (pid < 0) {
        say("cannot start rank " + std::to_string(r) + ": " + std::strerror(errno));
        result_ = 1;
        return false;
    }
    ::setpgid(pid, pid); // both sides, whoever runs first
    out_wr.reset();
    err_wr.reset();
    st_wr.reset();
    // The launcher reads without blocking; the rank writes as usual.
    ::fcntl(out_rd.fd, F_SETFL, O_NONBLOCK);
    ::fcntl(err_rd.fd, F_SETFL, O_NONBLOCK);
    Rank &rk = ranks_[r];
    rk.pid = pid;
    rk.streams[0].fd = out_rd.release();
    rk.streams[0].out_fd = STDOUT_FILENO;
    rk.streams[1].fd = err_rd.release();
    rk.streams[1].out_fd = STDERR_FILENO;

    // EOF once the exec succeeded; the child's errno if it failed.
    int exec_err = 0;
    ssize_t n;
    do {
        n = ::read(st_rd.fd, &exec_err, sizeof(exec_err));
    } while (n < 0 && errno == EINTR);
    if (n == static_cast<ssize_t>(sizeof(exec_err))) {
        say("rank " + std::to_string(r) + ": cannot execute " + path + ": " +
            std::strerror(exec_err));
        result_ = exec_err == ENOENT ? 127 : 126;
        return false;
    }
    return true;
}

// The signal to rank r's process group (which holds whatever it started),
// and to the rank itself if it left its group.
void Launcher::signal_all(int sig) {
    for (Rank &rk : ranks_) {
        if (rk.pid <= 0)
            continue;
        ::kill(-rk.pid, sig);
        if (!rk.exited && ::getpgid(rk.pid) != rk.pid)
            ::kill(rk.pid, sig);
    }
}

void Launcher::begin_kill(Clock::time_point now) {
    if (kill_state_ != running)
        return;
    if (opt_.grace > 0) {
        signal_all(SIGTERM);
        kill_state_ = term_sent;
        kill_at_ = now + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(opt_.grace));
    } else {
        signal_all(SIGKILL);
        kill_state_ = kill_sent;
        close_at_ = now + pipe_linger;
    }
}

// Notes every rank that has exited, without reaping it: a zombie keeps its
// pid, so its process group id cannot be reused while we may still signal
// that group.
void Launcher::check_children() {
    for (std::uint32_t r = 0; r < ranks_.size(); r++) {
        Rank &rk = ranks_[r];
        if (rk.pid <= 0 || rk.exited)
            continue;
        siginfo_t si{};
        if (::waitid(P_PID, static_cast<id_t>(rk.pid), &si, WEXITED | WNOHANG | WNOWAIT) != 0 ||
            si.si_pid != rk.pid)
            continue;
        rk.exited = true;
        if (si.si_code == CLD_EXITED)
            rk.status = (si.si_status & 0xff) << 8;
        else
            rk.status = (si.si_status & 0x7f) | (si.si_code == CLD_DUMPED ? 0x80 : 0);
        const bool failed = !(WIFEXITED(rk.status) && WEXITSTATUS(rk.status) == 0);
        if (failed && !result_ && !interrupted_) {
            result_ = exit_code_of(rk.status);
            std::uint32_t left = 0;
            for (const Rank &o : ranks_)
                left += o.pid > 0 && !o.exited;
            say("rank " + std::to_string(r) + " (pid " + std::to_string(rk.pid) + ") " +
                describe(rk.status) +
                (left ? "; stopping the other " + std::to_string(left) + " rank" +
                            (left == 1 ? "" : "s")
                      : std::string()));
            begin_kill(Clock::now());
        }
    }
}

void Launcher::on_signal(int sig, Clock::time_point now) {
    if (sig == SIGCHLD) {
        check_children();
        return;
    }
    if (interrupted_ || kill_state_ != running) {
        // A second one: no more waiting.
        if (kill_state_ != kill_sent) {
            signal_all(SIGKILL);
            kill_state_ = kill_sent;
            close_at_ = now + pipe_linger;
        }
        if (!interrupted_)
            interrupted_ = sig;
        return;
    }
    interrupted_ = sig;
    signal_all(sig);
    // Forwarded as is; SIGKILL if the ranks are still there after the grace.
    kill_state_ = term_sent;
    kill_at_ = now + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(opt_.grace));
}

void Launcher::lost_output() {
    if (interrupted_ || result_)
        return;
    interrupted_ = SIGPIPE;
    begin_kill(Clock::now());
}

// Queues one line (without its newline) for s's output, in pieces of at
// most max_line bytes.
void Launcher::emit(Stream &s, std::uint32_t r, std::string_view line) {
    std::string &p = pending_[s.out_fd];
    const std::string prefix = "[" + std::to_string(r) + "] ";
    do {
        const std::string_view piece = line.substr(0, max_line);
        line.remove_prefix(piece.size());
        p += prefix;
        p += piece;
        p += '\n';
    } while (!line.empty());
}

void Launcher::flush_out(int fd) {
    std::string &p = pending_[fd];
    if (p.empty())
        return;
    if (!out_lost_[fd] && !write_all(fd, p)) {
        out_lost_[fd] = true;
        lost_output();
    }
    p.clear();
}

// One read() of s; true if it brought data.
bool Launcher::read_stream(std::uint32_t r, Stream &s) {
    char chunk[read_chunk];
    const ssize_t n = ::read(s.fd, chunk, sizeof(chunk));
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return false;
    if (n <= 0) {
        close_stream(r, s);
        return false;
    }
    std::size_t scan = s.buf.size();
    s.buf.append(chunk, static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (;;) {
        const std::size_t nl = s.buf.find('\n', scan);
        if (nl == std::string::npos)
            break;
        emit(s, r, std::string_view(s.buf).substr(start, nl - start));
        start = scan = nl + 1;
    }
    s.buf.erase(0, start);
    // A line longer than max_line goes out in pieces; the rest waits.
    if (s.buf.size() > max_line) {
        const std::size_t whole = (s.buf.size() - 1) / max_line * max_line;
        emit(s, r, std::string_view(s.buf).substr(0, whole));
        s.buf.erase(0, whole);
    }
    flush_out(s.out_fd);
    return true;
}

// Reads what the pipes hold right now (bounded: a writer that is still
// there may never stop).  A rank's own ends are closed by the time it is
// seen exiting, so a pipe still open after this is held by someone else.
void Launcher::drain_all() {
    for (std::uint32_t r = 0; r < ranks_.size(); r++)
        for (Stream &s : ranks_[r].streams)
            for (int i = 0; i < 64 && s.fd >= 0 && read_stream(r, s); i++) {
            }
}

// EOF (or a read error): the last partial line goes out with a newline.
void Launcher::close_stream(std::uint32_t r, Stream &s) {
    if (s.fd < 0)
        return;
    if (!s.buf.empty()) {
        emit(s, r, s.buf);
        s.buf.clear();
        flush_out(s.out_fd);
    }
    ::close(s.fd);
    s.fd = -1;
}

bool Launcher::all_exited() const {
    return std::all_of(ranks_.begin(), ranks_.end(),
                       [](const Rank &rk) { return rk.pid <= 0 || rk.exited; });
}

bool Launcher::any_stream_open() const {
    for (const Rank &rk : ranks_)
        for (const Stream &s : rk.streams)
            if (s.fd >= 0)
                return true;
    return false;
}

int Launcher::run() {
    setup();
    const std::string path = resolve_program(opt_.argv[0]);
    for (std::uint32_t r = 0; r < opt_.n; r++) {
        if (!spawn(r, path)) {
            // Nothing is going to run: stop what started, at once.
            signal_all(SIGKILL);
            kill_state_ = kill_sent;
            close_at_ = Clock::now() + pipe_linger;
            break;
        }
    }

    const Clock::time_point start = Clock::now();
    std::optional<Clock::time_point> deadline;
    if (opt_.timeout)
        deadline = start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(*opt_.timeout));
    bool timed_out = false;

    std::vector<pollfd> pfds;
    std::vector<std::pair<std::uint32_t, int>> who; // (rank, stream) of pfds[i + 1]
    for (;;) {
        Clock::time_point now = Clock::now();
        // Timers.
        if (deadline && !timed_out && now >= *deadline) {
            timed_out = true;
            if (!result_ && !interrupted_) {
                result_ = 124;
                std::string still;
                for (std::uint32_t r = 0; r < ranks_.size(); r++)
                    if (ranks_[r].pid > 0 && !ranks_[r].exited)
                        still += " " + std::to_string(r);
                say("timeout after " + seconds(*opt_.timeout) +
                    " s; killing the job (ranks still running:" + still + ")");
            }
            begin_kill(now);
        }
        if (kill_state_ == term_sent && now >= kill_at_) {
            signal_all(SIGKILL);
            kill_state_ = kill_sent;
            close_at_ = now + pipe_linger;
        }
        if (kill_state_ == kill_sent && now >= close_at_ && all_exited()) {
            for (std::uint32_t r = 0; r < ranks_.size(); r++)
                for (Stream &s : ranks_[r].streams)
                    close_stream(r, s);
        }
        if (all_exited()) {
            drain_all();
            if (!any_stream_open())
                break;
            // What the ranks left behind holds a pipe: end it.
            begin_kill(now);
        }

        Clock::time_point wake = Clock::time_point::max();
        if (deadline && !timed_out)
            wake = std::min(wake, *deadline);
        if (kill_state_ == term_sent)
            wake = std::min(wake, kill_at_);
        if (kill_state_ == kill_sent && all_exited())
            wake = std::min(wake, close_at_);
        int timeout_ms = -1;
        if (wake != Clock::time_point::max()) {
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(wake - now).count();
            timeout_ms = static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
        }

        pfds.clear();
        who.clear();
        pfds.push_back({sigfd_, POLLIN, 0});
        for (std::uint32_t r = 0; r < ranks_.size(); r++)
            for (int i = 0; i < 2; i++)
                if (ranks_[r].streams[i].fd >= 0) {
                    pfds.push_back({ranks_[r].streams[i].fd, POLLIN, 0});
                    who.emplace_back(r, i);
                }
        // A SIGKILLed rank whose zombie we hold cannot be seen exiting
        // other than by SIGCHLD, which the signalfd gives; no busy loop.
        if (::poll(pfds.data(), pfds.size(), timeout_ms) < 0) {
            if (errno == EINTR)
                continue;
            throw std::system_error(errno, std::generic_category(), "poll");
        }
        now = Clock::now();
        if (pfds[0].revents & POLLIN) {
            signalfd_siginfo si;
            while (::read(sigfd_, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si)))
                on_signal(static_cast<int>(si.ssi_signo), now);
        }
        for (std::size_t i = 1; i < pfds.size(); i++)
            if (pfds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
                const auto [r, s] = who[i - 1];
                read_stream(r, ranks_[r].streams[s]);
            }
    }

    // Reap every zombie we held.
    for (Rank &rk : ranks_)
        if (rk.pid > 0) {
            int st;
            while (::waitpid(rk.pid, &st, 0) < 0 && errno == EINTR) {
            }
        }
    if (result_)
        return *result_;
    if (interrupted_)
        return 128 + interrupted_;
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    // Closed standard descriptors would be reused by the pipes and then
    // lost in the ranks' dup2() calls: fill them with /dev/null.
    for (int fd = 0; fd <= 2; fd++)
        if (::fcntl(fd, F_GETFD) < 0 && ::open("/dev/null", O_RDWR) != fd)
            return 1;
    const Options opt = parse_options(argc, argv);
    try {
        // K and the card limits from the first card, when there is one.
        nicoff::DeviceInfo dev{}; // num_cards 0: no device
        try {
            if (const auto info = nicoff::Job::query_device())
                dev = *info;
        } catch (const std::system_error &e) {
            if (!opt.nics) {
                say(std::string("cannot query /dev/nicoff0 for the number of cards (") + e.what() +
                    "); pass --nics");
                return 1;
            }
        }
        const std::uint32_t nics =
            opt.nics ? *opt.nics
                     : (dev.num_cards ? std::min(dev.num_cards, nicoff::job_value_max) : opt.n);
        std::uint32_t last_port;
        try {
            last_port = nicoff::job_placement(opt.n - 1, nics, opt.port_base).port;
        } catch (const std::system_error &e) {
            usage_error(e.what());
        }
        if (dev.num_cards && nics > dev.num_cards)
            usage_error("--nics " + std::to_string(nics) + " but the module has " +
                        std::to_string(dev.num_cards) + " cards");
        if (dev.num_cards && dev.max_ports && last_port >= dev.max_ports)
            usage_error("rank " + std::to_string(opt.n - 1) + " would use port " +
                        std::to_string(last_port) + " but cards have ports 0-" +
                        std::to_string(dev.max_ports - 1) +
                        " (use more cards, fewer ranks or a lower --port-base)");

        std::string job_id = opt.job_id
                                 ? *opt.job_id
                                 : std::to_string(::getpid()) + "-" +
                                       std::to_string(static_cast<long long>(std::time(nullptr)));
        Launcher launcher(opt, nics, std::move(job_id));
        return launcher.run();
    } catch (const std::exception &e) {
        say(e.what());
        return 1;
    }
}
