// nicoffrun end to end on the host, with /bin/sh ranks: the environment and
// mapping each rank gets, the "[r] " output forwarding, failures, signals,
// the timeout and usage errors.  No card needed (--nics is given, or the
// launcher falls back to one card per rank).  The launcher is $NICOFFRUN,
// else the build tree's (NICOFFRUN_PATH from build.mk).
#include <nicoff/nicoff.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

// Last: cmocka's macros (fail, ...) clash with the standard headers.
#include "cmocka.hpp"

#ifndef NICOFFRUN_PATH
#define NICOFFRUN_PATH "nicoffrun"
#endif

namespace {

using Clock = std::chrono::steady_clock;

std::string launcher() {
    const char *env = std::getenv("NICOFFRUN");
    return env && *env ? env : NICOFFRUN_PATH;
}

struct Result {
    int status = -1; // exit code, or 128 + signal
    std::string out, err;
    double secs = 0;
};

// Called after each read of the launcher's stdout with all of it so far.
using Hook = std::function<void(pid_t launcher, const std::string &out)>;

// Runs nicoffrun with args; gives up (and fails) after limit seconds.
Result run(const std::vector<std::string> &args, const Hook &hook = {},
           const std::vector<std::pair<std::string, std::string>> &env = {}, double limit = 30) {
    const std::string path = launcher();
    std::vector<char *> argv;
    argv.push_back(const_cast<char *>(path.c_str()));
    for (const std::string &a : args)
        argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);

    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
        fail_msg("pipe: %s", std::strerror(errno));
    const Clock::time_point t0 = Clock::now();
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(out[1], STDOUT_FILENO);
        dup2(err[1], STDERR_FILENO);
        for (const auto &[k, v] : env)
            setenv(k.c_str(), v.c_str(), 1);
        execv(path.c_str(), argv.data());
        std::fprintf(stderr, "exec %s: %s\n", path.c_str(), std::strerror(errno));
        _exit(255);
    }
    assert_true(pid > 0);
    close(out[1]);
    close(err[1]);

    Result res;
    int fds[2] = {out[0], err[0]};
    std::string *bufs[2] = {&res.out, &res.err};
    bool hung = false;
    while (fds[0] >= 0 || fds[1] >= 0) {
        const double left = limit - std::chrono::duration<double>(Clock::now() - t0).count();
        if (left <= 0) {
            hung = true;
            kill(pid, SIGTERM);
            std::this_thread::sleep_for(std::chrono::seconds(3));
            kill(pid, SIGKILL);
            break;
        }
        pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
        if (poll(p, 2, static_cast<int>(left * 1000) + 1) < 0 && errno != EINTR)
            fail_msg("poll: %s", std::strerror(errno));
        for (int i = 0; i < 2; i++) {
            if (fds[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char buf[65536];
            const ssize_t n = read(fds[i], buf, sizeof(buf));
            if (n <= 0) {
                close(fds[i]);
                fds[i] = -1;
                continue;
            }
            bufs[i]->append(buf, static_cast<std::size_t>(n));
            if (i == 0 && hook)
                hook(pid, res.out);
        }
    }
    for (int fd : fds)
        if (fd >= 0)
            close(fd);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    res.secs = std::chrono::duration<double>(Clock::now() - t0).count();
    res.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (hung)
        fail_msg("nicoffrun still running after %.0f s; stdout:\n%s\nstderr:\n%s", limit,
                 res.out.c_str(), res.err.c_str());
    return res;
}

std::vector<std::string> lines_of(const std::string &s) {
    std::vector<std::string> v;
    std::istringstream in(s);
    for (std::string line; std::getline(in, line);)
        v.push_back(line);
    return v;
}

// "[r] rest" -> (r, rest); r = -1 when the line has no prefix.
std::pair<int, std::string> split_prefix(const std::string &line) {
    if (line.size() < 4 || line[0] != '[')
        return {-1, line};
    const std::size_t close = line.find("] ");
    if (close == std::string::npos || close == 1)
        return {-1, line};
    for (std::size_t i = 1; i < close; i++)
        if (line[i] < '0' || line[i] > '9')
            return {-1, line};
    return {std::atoi(line.c_str() + 1), line.substr(close + 2)};
}

// Lines of each rank, in order; fails on a line without a prefix.
std::map<int, std::vector<std::string>> by_rank(const std::string &s) {
    std::map<int, std::vector<std::string>> m;
    for (const std::string &line : lines_of(s)) {
        auto [r, rest] = split_prefix(line);
        if (r < 0)
            fail_msg("line without a rank prefix: '%.200s'", line.c_str());
        m[r].push_back(rest);
    }
    return m;
}

void expect_contains(const std::string &hay, const std::string &needle) {
    if (hay.find(needle) == std::string::npos)
        fail_msg("'%s' not found in:\n%s", needle.c_str(), hay.c_str());
}

void expect_status(const Result &r, int want) {
    if (r.status != want)
        fail_msg("nicoffrun exited %d, want %d; stdout:\n%s\nstderr:\n%s", r.status, want,
                 r.out.c_str(), r.err.c_str());
}

// Gone, or a zombie that is no longer ours to reap.
bool process_dead(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string stat;
    if (!std::getline(f, stat))
        return true;
    const std::size_t close = stat.rfind(')');
    return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
}

void expect_dead(pid_t pid) {
    for (int i = 0; i < 300 && !process_dead(pid); i++)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!process_dead(pid)) {
        kill(pid, SIGKILL);
        fail_msg("process %d outlived the job", static_cast<int>(pid));
    }
}

// pids printed by the ranks as "pid N".
std::vector<pid_t> pids_in(const std::string &out) {
    std::vector<pid_t> pids;
    for (const auto &[r, lines] : by_rank(out))
        for (const std::string &l : lines)
            if (l.rfind("pid ", 0) == 0)
                pids.push_back(static_cast<pid_t>(std::atoi(l.c_str() + 4)));
    return pids;
}

int group_setup(void **) {
    const std::string path = launcher();
    if (access(path.c_str(), X_OK) != 0) {
        std::fprintf(stderr, "no nicoffrun at %s (set NICOFFRUN)\n", path.c_str());
        return -1;
    }
    return 0;
}

// --- environment and mapping ------------------------------------------------------

const char *print_env = "echo \"R=$NICOFF_RANK S=$NICOFF_SIZE J=$NICOFF_JOB_ID K=$NICOFF_NICS "
                        "P=$NICOFF_PORT_BASE C=$NICOFF_CARD O=$NICOFF_PORT\"; "
                        "echo \"E=$NICOFF_RANK\" >&2";

void test_ranks_env(void **) {
    for (std::uint32_t n : {1u, 3u, 8u}) {
        // Values inherited by the launcher must not leak into the ranks.
        const Result res = run({"-n", std::to_string(n), "--nics", "3", "--port-base", "20",
                                "--job-id", "tj", "--", "/bin/sh", "-c", print_env},
                               {}, {{"NICOFF_RANK", "99"}, {"NICOFF_CARD", "77"}});
        expect_status(res, 0);
        const auto out = by_rank(res.out);
        const auto err = by_rank(res.err);
        assert_int_equal(out.size(), n);
        assert_int_equal(err.size(), n);
        assert_int_equal(lines_of(res.out).size(), n);
        for (std::uint32_t r = 0; r < n; r++) {
            // Written out here, not taken from the code under test.
            const std::uint32_t card = r % 3, port = 20 + r / 3;
            assert_true(nicoff::job_placement(r, 3, 20) == (nicoff::Placement{card, port}));
            const std::string want = "R=" + std::to_string(r) + " S=" + std::to_string(n) +
                                     " J=tj K=3 P=20 C=" + std::to_string(card) +
                                     " O=" + std::to_string(port);
            const auto it = out.find(static_cast<int>(r));
            if (it == out.end() || it->second.size() != 1 || it->second[0] != want)
                fail_msg("rank %u of %u: want exactly '%s' in:\n%s", r, n, want.c_str(),
                         res.out.c_str());
            const auto e = err.find(static_cast<int>(r));
            assert_true(e != err.end() && e->second.size() == 1);
            assert_string_equal(e->second[0].c_str(), ("E=" + std::to_string(r)).c_str());
        }
    }
}

void test_defaults(void **) {
    // Default job id: one non-empty id for all ranks; default port base 16.
    Result res = run({"-n", "4", "--nics", "2", "/bin/sh", "-c", print_env});
    expect_status(res, 0);
    std::set<std::string> ids;
    for (const auto &[r, lines] : by_rank(res.out)) {
        assert_int_equal(lines.size(), 1);
        expect_contains(lines[0],
                        "K=2 P=16 C=" + std::to_string(r % 2) + " O=" + std::to_string(16 + r / 2));
        const std::size_t j = lines[0].find(" J=");
        ids.insert(lines[0].substr(j + 3, lines[0].find(' ', j + 1) - j - 3));
    }
    assert_int_equal(ids.size(), 1);
    assert_false(ids.begin()->empty());
    // Without --nics and without a card: one card per rank.
    if (nicoff::Job::query_device())
        return;
    res = run({"-n", "5", "/bin/sh", "-c", print_env});
    expect_status(res, 0);
    for (const auto &[r, lines] : by_rank(res.out))
        expect_contains(lines.at(0), "K=5 P=16 C=" + std::to_string(r) + " O=16");
}

void test_args_passed(void **) {
    // Options after the program belong to it.
    const Result res =
        run({"-n", "2", "--nics", "1", "/bin/sh", "-c", "echo \"$0|$1|$2\"", "-n", "--timeout"});
    expect_status(res, 0);
    for (const auto &[r, lines] : by_rank(res.out))
        assert_string_equal(lines.at(0).c_str(), "-n|--timeout|");
}

// --- failures ------------------------------------------------------------------------

void test_failure_kills_others(void **) {
    // Rank 2 exits 3 while the others sleep 100 s: as the rank itself...
    Result res = run({"-n", "4", "--nics", "4", "/bin/sh", "-c",
                      "if [ \"$NICOFF_RANK\" = 2 ]; then sleep 0.3; exit 3; fi; "
                      "echo \"pid $$\"; exec sleep 100"});
    expect_status(res, 3);
    assert_true(res.secs < 5);
    expect_contains(res.err, "rank 2");
    expect_contains(res.err, "exited with status 3");
    std::vector<pid_t> pids = pids_in(res.out);
    assert_int_equal(pids.size(), 3);
    for (pid_t p : pids)
        expect_dead(p);
    // ... and as a child of the rank's shell (the rank's process group).
    res = run({"-n", "3", "--nics", "3", "/bin/sh", "-c",
               "if [ \"$NICOFF_RANK\" = 0 ]; then sleep 0.3; exit 3; fi; "
               "sleep 100 & echo \"pid $!\"; wait"});
    expect_status(res, 3);
    assert_true(res.secs < 5);
    expect_contains(res.err, "rank 0");
    pids = pids_in(res.out);
    assert_int_equal(pids.size(), 2);
    for (pid_t p : pids)
        expect_dead(p);
}

void test_last_rank_fails(void **) {
    // Exit 0 only when every rank exits 0: the last one to end decides too.
    const Result res = run({"-n", "3", "--nics", "3", "/bin/sh", "-c",
                            "if [ \"$NICOFF_RANK\" = 1 ]; then sleep 0.3; exit 1; fi; echo ok"});
    expect_status(res, 1);
    expect_contains(res.err, "rank 1");
    assert_int_equal(by_rank(res.out).size(), 2);
}

void test_killed_by_signal(void **) {
    Result res = run({"-n", "3", "--nics", "3", "/bin/sh", "-c",
                      "if [ \"$NICOFF_RANK\" = 1 ]; then sleep 0.2; kill -KILL $$; fi; "
                      "exec sleep 100"});
    expect_status(res, 128 + SIGKILL);
    assert_true(res.secs < 5);
    expect_contains(res.err, "rank 1");
    expect_contains(res.err, "signal 9");
    res = run({"-n", "2", "--nics", "2", "/bin/sh", "-c",
               "if [ \"$NICOFF_RANK\" = 0 ]; then kill -USR1 $$; fi; exec sleep 100"});
    expect_status(res, 128 + SIGUSR1);
    assert_true(res.secs < 5);
    expect_contains(res.err, "rank 0");
    expect_contains(res.err, "signal " + std::to_string(SIGUSR1));
}

void test_timeout(void **) {
    Result res = run(
        {"--timeout", "1", "-n", "3", "--nics", "3", "/bin/sh", "-c", "echo up; exec sleep 100"});
    expect_status(res, 124);
    assert_true(res.secs >= 0.9 && res.secs < 5);
    expect_contains(res.err, "timeout");
    assert_int_equal(by_rank(res.out).size(), 3);
    // Ranks that ignore SIGTERM get SIGKILL after the grace period.
    res = run({"--timeout", "0.5", "--grace", "0.5", "-n", "2", "--nics", "2", "/bin/sh", "-c",
               "trap '' TERM; echo \"pid $$\"; exec sleep 100"});
    expect_status(res, 124);
    assert_true(res.secs >= 0.95 && res.secs < 5);
    const auto pids = pids_in(res.out);
    assert_int_equal(pids.size(), 2);
    for (pid_t p : pids)
        expect_dead(p);
    // A job that ends in time is not affected.
    res = run({"--timeout", "10", "-n", "2", "--nics", "2", "/bin/true"});
    expect_status(res, 0);
}

void test_exec_failure(void **) {
    Result res = run({"-n", "3", "--nics", "3", "/nonexistent/prog"});
    expect_status(res, 127);
    expect_contains(res.err, "/nonexistent/prog");
    res = run({"-n", "2", "--nics", "2", "no-such-command-for-nicoffrun"});
    expect_status(res, 127);
    expect_contains(res.err, "not found");
    res = run({"-n", "2", "--nics", "2", "/etc/passwd"}); // not executable
    expect_status(res, 126);
}

void test_orphans(void **) {
    // A rank that leaves a background process holding its stdout: the job
    // still ends when the ranks do, and the leftovers are stopped.
    const Result res =
        run({"-n", "2", "--nics", "2", "/bin/sh", "-c", "sleep 100 & echo \"pid $!\"; exit 0"});
    expect_status(res, 0);
    assert_true(res.secs < 5);
    const std::vector<pid_t> pids = pids_in(res.out);
    assert_int_equal(pids.size(), 2);
    for (pid_t p : pids)
        expect_dead(p);
}

// --- signals to the launcher -----------------------------------------------------------

// A hook that sends sig to the launcher once `count` lines hold "ready".
Hook signal_when_ready(int sig, int count) {
    auto sent = std::make_shared<bool>(false);
    return [=](pid_t pid, const std::string &out) {
        int ready = 0;
        for (std::size_t at = 0; (at = out.find("] ready\n", at)) != std::string::npos; at++)
            ready++;
        if (!*sent && ready >= count) {
            *sent = true;
            kill(pid, sig);
        }
    };
}

void test_forwarded_signals(void **) {
    // SIGTERM reaches every rank, which may clean up and report.
    Result res = run({"-n", "2", "--nics", "2", "/bin/sh", "-c",
                      "trap 'echo got$NICOFF_RANK; exit 0' TERM; echo ready; "
                      "while :; do sleep 0.05; done"},
                     signal_when_ready(SIGTERM, 2));
    expect_status(res, 128 + SIGTERM);
    assert_true(res.secs < 10);
    const auto out = by_rank(res.out);
    for (int r = 0; r < 2; r++) {
        const auto &lines = out.at(r);
        assert_true(std::find(lines.begin(), lines.end(), "got" + std::to_string(r)) !=
                    lines.end());
    }
    // SIGINT to ranks that do not catch it.
    res = run({"-n", "3", "--nics", "3", "/bin/sh", "-c", "echo ready; exec sleep 100"},
              signal_when_ready(SIGINT, 3));
    expect_status(res, 128 + SIGINT);
    assert_true(res.secs < 10);
    // A launcher killed outright takes its ranks with it.
    res = run(
        {"-n", "2", "--nics", "2", "/bin/sh", "-c", "echo \"pid $$\"; echo ready; exec sleep 100"},
        signal_when_ready(SIGKILL, 2));
    expect_status(res, 128 + SIGKILL);
    const std::vector<pid_t> pids = pids_in(res.out);
    assert_int_equal(pids.size(), 2);
    for (pid_t p : pids)
        expect_dead(p);
}

// --- output ------------------------------------------------------------------------------

void test_partial_and_long_lines(void **) {
    // Each rank: a short line, a 100 kB line of its digit written in many
    // pieces, a short line, then a last line without a newline, on both
    // streams.  Lines must come out whole, prefixed, in order per rank.
    const int n = 4;
    const Result res =
        run({"-n", std::to_string(n), "--nics", "2", "/bin/sh", "-c",
             "echo start; head -c 100000 /dev/zero | tr '\\0' \"$NICOFF_RANK\"; echo; echo mid; "
             "printf \"tail-$NICOFF_RANK\"; printf \"err-$NICOFF_RANK\" >&2"});
    expect_status(res, 0);
    const auto out = by_rank(res.out);
    const auto err = by_rank(res.err);
    assert_int_equal(out.size(), n);
    for (int r = 0; r < n; r++) {
        const std::vector<std::string> want = {"start", std::string(100000, char('0' + r)), "mid",
                                               "tail-" + std::to_string(r)};
        const auto &got = out.at(r);
        if (got != want) {
            std::string sizes;
            for (const std::string &l : got)
                sizes += std::to_string(l.size()) + " ";
            fail_msg("rank %d: %zu lines of sizes %s", r, got.size(), sizes.c_str());
        }
        assert_true(err.at(r) == std::vector<std::string>{"err-" + std::to_string(r)});
    }
    assert_true(res.out.back() == '\n');
}

void test_many_lines(void **) {
    // 5000 lines per rank from 6 ranks at once: none lost, none mixed.
    const Result res = run({"-n", "6", "--nics", "6", "/bin/sh", "-c", "seq 5000"});
    expect_status(res, 0);
    const auto out = by_rank(res.out);
    assert_int_equal(out.size(), 6);
    for (const auto &[r, lines] : out) {
        assert_int_equal(lines.size(), 5000);
        for (int i = 0; i < 5000; i++)
            if (lines[static_cast<std::size_t>(i)] != std::to_string(i + 1))
                fail_msg("rank %d line %d: '%s'", r, i, lines[static_cast<std::size_t>(i)].c_str());
    }
}

// --- usage ---------------------------------------------------------------------------------

void test_usage_errors(void **) {
    const std::vector<std::vector<std::string>> bad = {
        {},
        {"-n"},
        {"/bin/true"},
        {"-n", "2"},
        {"-n", "0", "/bin/true"},
        {"-n", "x", "/bin/true"},
        {"-n", "-1", "/bin/true"},
        {"-n", "2", "--nics", "0", "/bin/true"},
        {"-n", "2", "--nics", "two", "/bin/true"},
        {"-n", "2", "--port-base", "-5", "/bin/true"},
        {"-n", "2", "--nics", "1", "--port-base", "2147483647", "/bin/true"},
        {"-n", "2", "--timeout", "0", "/bin/true"},
        {"-n", "2", "--timeout", "-1", "/bin/true"},
        {"-n", "2", "--timeout", "soon", "/bin/true"},
        {"-n", "2", "--job-id", "", "/bin/true"},
        {"--bogus", "-n", "2", "/bin/true"},
    };
    for (const auto &args : bad) {
        const Result res = run(args);
        std::string joined;
        for (const std::string &a : args)
            joined += "'" + a + "' ";
        if (res.status != 2 || res.err.find("nicoffrun: ") == std::string::npos)
            fail_msg("nicoffrun %s: exit %d, stderr '%s'", joined.c_str(), res.status,
                     res.err.c_str());
        assert_true(res.out.empty());
    }
    const Result help = run({"--help"});
    expect_status(help, 0);
    expect_contains(help.out, "usage: nicoffrun -n N");
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranks_env),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_args_passed),
        cmocka_unit_test(test_failure_kills_others),
        cmocka_unit_test(test_last_rank_fails),
        cmocka_unit_test(test_killed_by_signal),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_exec_failure),
        cmocka_unit_test(test_orphans),
        cmocka_unit_test(test_forwarded_signals),
        cmocka_unit_test(test_partial_and_long_lines),
        cmocka_unit_test(test_many_lines),
        cmocka_unit_test(test_usage_errors),
    };
    return cmocka_run_group_tests_name("nicoffrun", tests, group_setup, nullptr);
}
