// The PMI-1 client (src/pmi.hpp) and the job agreement made through it,
// each against a peer process at the other end of a socketpair that
// speaks the wire protocol from a script: the lines it must receive and
// the replies it sends, well-formed or not.  The peer's verdict is its
// exit status.
#include "pmi.hpp"

#include "common.hpp"

#include <nicoff/nicoff.hpp>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <system_error>
#include <vector>

#include "test_errors.hpp"

// Last: cmocka's macros (fail, ...) clash with the standard headers.
#include "cmocka.hpp"

namespace {

using nicoff::detail::PmiClient;
using nicoff::detail::PmiJob;
using namespace std::chrono_literals;

// One exchange of the peer's script.  expect: the line it must receive
// (a trailing '*' matches any rest); reply: sent as is (newline
// included), or "@put" for the get_result of the latest put's value,
// "@close" to hang up, "@mute" to say nothing until the client hangs up.
struct Step {
    std::string expect;
    std::string reply;
};

std::string read_line_raw(int fd, bool &eof) {
    std::string line;
    char c;
    for (;;) {
        const ssize_t n = ::read(fd, &c, 1);
        if (n <= 0) {
            eof = true;
            return line;
        }
        if (c == '\n')
            return line;
        line += c;
    }
}

bool matches(const std::string &got, const std::string &want) {
    if (!want.empty() && want.back() == '*')
        return got.compare(0, want.size() - 1, want, 0, want.size() - 1) == 0;
    return got == want;
}

[[noreturn]] void serve(int fd, const std::vector<Step> &script) {
    std::string put_value;
    for (const Step &s : script) {
        bool eof = false;
        const std::string got = read_line_raw(fd, eof);
        if (eof || !matches(got, s.expect)) {
            std::fprintf(stderr, "peer: got '%s'%s, want '%s'\n", got.c_str(),
                         eof ? " (then EOF)" : "", s.expect.c_str());
            ::_exit(1);
        }
        if (const std::size_t v = got.find(" value=");
            got.starts_with("cmd=put ") && v != std::string::npos)
            put_value = got.substr(v + 7);
        std::string reply = s.reply;
        if (reply == "@close")
            ::_exit(0);
        if (reply == "@mute") {
            while (!eof)
                (void)read_line_raw(fd, eof);
            ::_exit(0);
        }
        if (reply == "@put")
            reply = "cmd=get_result rc=0 msg=success value=" + put_value + "\n";
        if (::write(fd, reply.data(), reply.size()) != static_cast<ssize_t>(reply.size()))
            ::_exit(2);
    }
    // Nothing more may come.
    bool eof = false;
    const std::string extra = read_line_raw(fd, eof);
    if (!eof) {
        std::fprintf(stderr, "peer: unexpected '%s' after the script\n", extra.c_str());
        ::_exit(3);
    }
    ::_exit(0);
}

// A peer running script; the client's end of the socketpair is fd().
class Peer {
public:
    explicit Peer(const std::vector<Step> &script) {
        int sv[2];
        assert_int_equal(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        pid_ = ::fork();
        assert_true(pid_ >= 0);
        if (pid_ == 0) {
            ::close(sv[0]);
            serve(sv[1], script);
        }
        ::close(sv[1]);
        fd_ = sv[0];
    }
    ~Peer() {
        if (fd_ >= 0)
            ::close(fd_);
        if (pid_ > 0)
            ::waitpid(pid_, nullptr, 0);
    }
    int fd() const { return fd_; }
    // Hangs up and returns the peer's exit status (0: the script ran).
    // The PmiClient must be gone: its dup() keeps the connection open.
    int verdict() {
        ::close(fd_);
        fd_ = -1;
        int st = 0;
        assert_int_equal(::waitpid(pid_, &st, 0), pid_);
        pid_ = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }

private:
    int fd_ = -1;
    pid_t pid_ = -1;
};

using nicoff::test::error_of;

void expect_error(int err, const char *mentions, const std::function<void()> &f) {
    std::string what;
    assert_int_equal(error_of(f, &what), err);
    if (!std::strstr(what.c_str(), mentions))
        fail_msg("message '%s' does not mention '%s'", what.c_str(), mentions);
}

const Step init_ok{"cmd=init pmi_version=1 pmi_subversion=1",
                   "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n"};
const Step kvs_ok{"cmd=get_my_kvsname", "cmd=my_kvsname kvsname=kvs_7_0\n"};
const Step barrier_ok{"cmd=barrier_in", "cmd=barrier_out\n"};

// For agreements that must not search a port base.
std::unique_ptr<nicoff::detail::FileDesc> held;
const nicoff::detail::PortHolder no_hold = [](const nicoff::Placement &) {
    fail_msg("a port was tried");
    return std::unique_ptr<nicoff::detail::FileDesc>();
};

// The job's id, number of cards and port base.
void assert_job(const PmiJob &job, const std::string &id, std::uint32_t nics,
                std::uint32_t port_base) {
    assert_string_equal(job.id.c_str(), id.c_str());
    assert_int_equal(job.nics, nics);
    assert_int_equal(job.port_base, port_base);
}

// pmi_agree() as rank `rank` of size over a client of its own talking to
// peer.  The client is gone when it returns or throws: peer.verdict() may
// follow.
PmiJob agree(const Peer &peer, std::uint32_t rank, std::uint32_t size,
             const std::function<PmiJob(const std::string &)> &decide,
             const nicoff::detail::PortHolder &hold = no_hold) {
    PmiClient pmi(peer.fd(), 10s);
    return nicoff::detail::pmi_agree(pmi, rank, size, decide, hold, held);
}

// --- the protocol --------------------------------------------------------------

void test_parse(void **) {
    const auto f = nicoff::detail::pmi_parse("cmd=get_result rc=0  msg=success value=a:b");
    assert_int_equal(f.size(), 4);
    assert_string_equal(f.at("cmd").c_str(), "get_result");
    assert_string_equal(f.at("value").c_str(), "a:b");
    assert_string_equal(nicoff::detail::pmi_parse("cmd=x value=").at("value").c_str(), "");
    for (const char *bad : {"", " ", "rc=0 cmd=x", "cmd=x garbage", "cmd=x =1", "nonsense"})
        assert_int_equal(error_of([bad] { (void)nicoff::detail::pmi_parse(bad); }), EPROTO);
}

void test_conversation(void **) {
    Peer peer({init_ok,
               kvs_ok,
               {"cmd=put kvsname=kvs_7_0 key=k value=v1", "cmd=put_result rc=0 msg=success\n"},
               barrier_ok,
               {"cmd=get kvsname=kvs_7_0 key=k", "cmd=get_result rc=0 msg=success value=v1\n"},
               {"cmd=get kvsname=kvs_7_0 key=nope",
                "cmd=get_result rc=-1 msg=key_nope_not_found value=unknown\n"},
               {"cmd=finalize", "cmd=finalize_ack\n"}});
    {
        PmiClient pmi(peer.fd(), 10s);
        pmi.init();
        assert_string_equal(pmi.kvsname().c_str(), "kvs_7_0");
        pmi.put("kvs_7_0", "k", "v1");
        pmi.barrier();
        assert_string_equal(pmi.get("kvs_7_0", "k").value().c_str(), "v1");
        assert_false(pmi.get("kvs_7_0", "nope").has_value());
        // Fields the protocol cannot carry are refused before sending.
        assert_int_equal(error_of([&] { pmi.put("kvs_7_0", "k", "a b"); }), EINVAL);
        assert_int_equal(error_of([&] { pmi.put("kvs_7_0", "k=", "v"); }), EINVAL);
        assert_int_equal(error_of([&] { (void)pmi.get("kvs_7_0", ""); }), EINVAL);
        assert_false(pmi.broken());
        pmi.finalize();
        assert_true(pmi.broken());
    }
    assert_int_equal(peer.verdict(), 0);
}

void test_reads_only_its_reply(void **) {
    // Whatever follows a reply belongs to someone else (an MPI library
    // on the same socket): it must still be there after ours.
    Peer peer(std::vector<Step>{{"cmd=barrier_in", "cmd=barrier_out\ncmd=not_ours\n"}});
    {
        PmiClient pmi(peer.fd(), 10s);
        pmi.barrier();
    }
    char rest[32] = {};
    assert_int_equal(::recv(peer.fd(), rest, sizeof(rest) - 1, MSG_DONTWAIT), 13);
    assert_string_equal(rest, "cmd=not_ours\n");
    assert_int_equal(peer.verdict(), 0);
}

// One request whose reply is reply: the error it gives, naming mentions.
void bad_reply(const std::string &reply, int err, const char *mentions) {
    Peer peer({{"cmd=init*", reply}});
    {
        PmiClient pmi(peer.fd(), 2s);
        expect_error(err, mentions, [&] { pmi.init(); });
    }
    assert_int_equal(peer.verdict(), 0);
}

void test_bad_replies(void **) {
    bad_reply("garbage\n", EPROTO, "malformed");
    bad_reply("cmd=barrier_out\n", EPROTO, "in reply to cmd=init");
    bad_reply("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1 msg=refused\n", EPROTO,
              "msg=refused");
    bad_reply("cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n", EPROTO, "version 1");
    bad_reply(std::string(5000, 'a') + "\n", EPROTO, "longer than");
    bad_reply("@close", ECONNRESET, "closed the connection");
    // Half a line, then silence.
    bad_reply("cmd=response_to_init pmi_ver", ETIMEDOUT, "no reply to cmd=init within 2000 ms");
}

void test_out_of_step(void **) {
    // After an error the connection is not used again: a late reply
    // would be taken for the next request's.
    Peer peer({{"cmd=get_my_kvsname", "cmd=my_kvsname\n"}, {"cmd=barrier_in", "@mute"}});
    {
        PmiClient pmi(peer.fd(), 300ms);
        // A complete reply that lacks a field leaves the connection in step.
        expect_error(EPROTO, "without a kvsname", [&] { (void)pmi.kvsname(); });
        assert_false(pmi.broken());
        // The peer never answers: a bounded wait, not a hang.
        expect_error(ETIMEDOUT, "no reply to cmd=barrier_in", [&] { pmi.barrier(); });
        assert_true(pmi.broken());
        expect_error(EPROTO, "out of step", [&] { pmi.barrier(); });
    }
    assert_int_equal(peer.verdict(), 0);
}

void test_get_errors(void **) {
    Peer peer({{"cmd=get kvsname=s key=a", "cmd=get_result rc=0 msg=success\n"},
               {"cmd=put kvsname=s key=a value=1", "cmd=put_result rc=-1 msg=duplicate\n"}});
    {
        PmiClient pmi(peer.fd(), 2s);
        expect_error(EPROTO, "without a value", [&] { (void)pmi.get("s", "a"); });
        expect_error(EPROTO, "msg=duplicate", [&] { pmi.put("s", "a", "1"); });
    }
    assert_int_equal(peer.verdict(), 0);
}

void test_bad_fd(void **) {
    expect_error(EBADF, "PMI_FD=999", [] { PmiClient pmi(999, 1s); });
}

// --- the job's agreement ------------------------------------------------------

void test_encoding(void **) {
    const PmiJob j{"kvs_1 with blanks=and:colons", 3, 40, 0};
    const std::string v = nicoff::detail::pmi_job_encode(j);
    assert_null(std::strpbrk(v.c_str(), " ="));
    const PmiJob back = nicoff::detail::pmi_job_decode(v);
    assert_job(back, j.id, 3, 40);
    assert_int_equal(back.max_ports, 0);
    assert_string_equal(nicoff::detail::pmi_job_decode("v1:1:0:0:").id.c_str(), "");
    assert_int_equal(nicoff::detail::pmi_job_decode("v1:1:16:64:").max_ports, 64);
    for (const char *bad : {"", "v1", "v1:0:16:0:", "v1:2:16:0:6", "v1:2:16:0:zz",
                            "v1:-1:16:0:", "v2:2:16:0:", "v1:2:16:61", "v1:2:16:x:61",
                            "v1:2:16:0:61:62", "err:x:61", "err:0:61", "err:5:6"})
        expect_error(EPROTO, "not this library's",
                     [bad] { (void)nicoff::detail::pmi_job_decode(bad); });
    expect_error(ENODEV, "could not set it up: no card here", [] {
        (void)nicoff::detail::pmi_job_decode(
            nicoff::detail::pmi_job_encode_error(ENODEV, "no card here"));
    });
    expect_error(EINVAL, "too long", [] {
        (void)nicoff::detail::pmi_job_encode({std::string(600, 'x'), 1, 16, 0});
    });
}

void test_agree_rank0(void **) {
    const PmiJob mine{"kvs_7_0.x", 4, 20, 0};
    const std::string put =
        "cmd=put kvsname=kvs_7_0 key=nicoff-job value=" + nicoff::detail::pmi_job_encode(mine);
    Peer peer({init_ok,
               kvs_ok,
               {put, "cmd=put_result rc=0 msg=success\n"},
               barrier_ok,
               {"cmd=get kvsname=kvs_7_0 key=nicoff-job", "@put"}});
    std::string seen;
    const PmiJob got = agree(peer, 0, 2, [&](const std::string &kvs) {
        seen = kvs;
        return mine;
    });
    assert_string_equal(seen.c_str(), "kvs_7_0");
    assert_job(got, mine.id, 4, 20);
    assert_int_equal(peer.verdict(), 0);
}

void test_agree_rank0_fails(void **) {
    // Rank 0 cannot decide: it still publishes (its reason), and throws.
    Peer peer({init_ok,
               kvs_ok,
               {"cmd=put kvsname=kvs_7_0 key=nicoff-job value=err:19:*",
                "cmd=put_result rc=0 msg=success\n"},
               barrier_ok,
               {"cmd=get kvsname=kvs_7_0 key=nicoff-job", "@put"}});
    expect_error(ENODEV, "could not set it up: nicoff: no card", [&] {
        (void)agree(peer, 0, 2, [](const std::string &) -> PmiJob {
            throw std::system_error(ENODEV, std::generic_category(), "nicoff: no card");
        });
    });
    assert_int_equal(peer.verdict(), 0);
}

void test_agree_other_rank(void **) {
    const std::string get = "cmd=get kvsname=kvs_7_0 key=nicoff-job";
    const std::string value = nicoff::detail::pmi_job_encode({"j", 2, 33, 0});
    Peer peer({init_ok,
               kvs_ok,
               barrier_ok,
               {get, "cmd=get_result rc=0 msg=success value=" + value + "\n"}});
    bool asked = false;
    const PmiJob got = agree(peer, 1, 2, [&](const std::string &) {
        asked = true;
        return PmiJob{};
    });
    assert_false(asked); // only rank 0 decides
    assert_job(got, "j", 2, 33);
    assert_int_equal(peer.verdict(), 0);
}

void test_agree_nothing_published(void **) {
    // Rank 0 is not a nicoff program: nothing under the key.
    Peer peer({init_ok,
               kvs_ok,
               barrier_ok,
               {"cmd=get kvsname=kvs_7_0 key=nicoff-job",
                "cmd=get_result rc=-1 msg=key_nicoff-job_not_found value=unknown\n"}});
    expect_error(EPROTO, "published no nicoff-job", [&] { (void)agree(peer, 1, 2, nullptr); });
    assert_int_equal(peer.verdict(), 0);
}

void test_port_search(void **) {
    // Rank 1 of 3 over 2 cards, the base left to a search from 16 below
    // 64 ports: round 0 it finds its port taken, round 1 every rank got
    // its own.  The bases come from the job id, the same on every rank.
    const PmiJob job{"kvs_7_0.s", 2, 16, 64};
    const std::uint32_t span = 64 - 2 - 16 + 1;
    const std::uint32_t base0 = 16 + nicoff::job_group_id(job.id, 0) % span;
    const std::uint32_t base1 = 16 + nicoff::job_group_id(job.id, 1) % span;
    const std::string get = "cmd=get kvsname=kvs_7_0 key=";
    Peer peer(
        {init_ok,
         kvs_ok,
         barrier_ok,
         {get + "nicoff-job",
          "cmd=get_result rc=0 msg=success value=" + nicoff::detail::pmi_job_encode(job) + "\n"},
         {"cmd=put kvsname=kvs_7_0 key=nicoff-busy-0 value=1", "cmd=put_result rc=0 msg=success\n"},
         barrier_ok,
         {get + "nicoff-busy-0", "cmd=get_result rc=0 msg=success value=1\n"},
         barrier_ok,
         {get + "nicoff-busy-1", "cmd=get_result rc=-1 msg=key_not_found value=unknown\n"}});
    std::vector<nicoff::Placement> tried;
    const nicoff::detail::PortHolder hold = [&](const nicoff::Placement &p) {
        tried.push_back(p);
        return tried.size() == 1 ? nullptr : std::make_unique<nicoff::detail::FileDesc>(::dup(2));
    };
    const PmiJob got = agree(peer, 1, 3, nullptr, hold);
    assert_int_equal(got.port_base, base1);
    assert_int_equal(got.max_ports, 0);
    assert_non_null(held.get()); // kept for open_port()
    held.reset();
    assert_int_equal(tried.size(), 2);
    assert_true(tried[0] == (nicoff::Placement{1, base0}));
    assert_true(tried[1] == (nicoff::Placement{1, base1}));
    assert_int_equal(peer.verdict(), 0);
}

void test_port_search_error(void **) {
    // A rank meets an error trying its port: every rank throws it.
    const PmiJob job{"kvs_7_0.s", 2, 16, 64};
    Peer peer(
        {init_ok,
         kvs_ok,
         barrier_ok,
         {"cmd=get kvsname=kvs_7_0 key=nicoff-job",
          "cmd=get_result rc=0 msg=success value=" + nicoff::detail::pmi_job_encode(job) + "\n"},
         {"cmd=put kvsname=kvs_7_0 key=nicoff-busy-0 value=err:19:*",
          "cmd=put_result rc=0 msg=success\n"},
         barrier_ok,
         {"cmd=get kvsname=kvs_7_0 key=nicoff-busy-0", "@put"}});
    const nicoff::detail::PortHolder hold =
        [](const nicoff::Placement &) -> std::unique_ptr<nicoff::detail::FileDesc> {
        throw std::system_error(ENODEV, std::generic_category(), "nicoff: no card 1");
    };
    expect_error(ENODEV, "no card 1", [&] { (void)agree(peer, 1, 2, nullptr, hold); });
    assert_int_equal(peer.verdict(), 0);
}

// --- Job::from_env under Hydra -------------------------------------------------

// Runs f in a child process (Job::from_env keeps its agreement for the
// process) whose environment has vars; its exit status.
int in_child(const std::vector<std::pair<const char *, std::string>> &vars,
             const std::function<int()> &f) {
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        for (const auto &[k, v] : vars)
            ::setenv(k, v.c_str(), 1);
        int rc = 99;
        try {
            rc = f();
        } catch (const std::exception &e) {
            std::fprintf(stderr, "child: %s\n", e.what());
        }
        std::exit(rc); // runs the static destructors: the finalize
    }
    int st = 0;
    assert_int_equal(::waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void test_from_env(void **) {
    const std::string value = nicoff::detail::pmi_job_encode({"kvs_7_0.abc", 2, 30, 0});
    const std::vector<Step> rank1 = {init_ok,
                                     kvs_ok,
                                     barrier_ok,
                                     {"cmd=get kvsname=kvs_7_0 key=nicoff-job",
                                      "cmd=get_result rc=0 msg=success value=" + value + "\n"},
                                     {"cmd=finalize", "cmd=finalize_ack\n"}};
    {
        Peer peer(rank1);
        // Rank 1 of 3 with no NICOFF_ variable: what rank 0 decided, and
        // a second call asks nothing more of the launcher.
        const int rc = in_child(
            {{"PMI_RANK", "1"}, {"PMI_SIZE", "3"}, {"PMI_FD", std::to_string(peer.fd())}}, [] {
                const nicoff::Job job = nicoff::Job::from_env();
                const nicoff::Job again = nicoff::Job::from_env();
                const bool ok = job.id() == "kvs_7_0.abc" && job.nics() == 2 &&
                                job.port_base() == 30 && job.card() == 1 && job.port() == 30 &&
                                job.card_of(2) == 0 && job.port_of(2) == 31 &&
                                again.id() == job.id() && again.port_base() == 30;
                return ok ? 0 : 10;
            });
        assert_int_equal(rc, 0);
        assert_int_equal(peer.verdict(), 0);
    }
    {
        // This rank's own NICOFF_NICS says otherwise: refused, named.
        Peer peer(rank1);
        const int rc = in_child(
            {{"PMI_RANK", "1"},
             {"PMI_SIZE", "3"},
             {"NICOFF_NICS", "3"},
             {"PMI_FD", std::to_string(peer.fd())}},
            [] {
                std::string what;
                const int err = error_of([] { (void)nicoff::Job::from_env(); }, &what);
                return err == EINVAL && what.find("NICOFF_NICS=3") != std::string::npos ? 0 : 11;
            });
        assert_int_equal(rc, 0);
        assert_int_equal(peer.verdict(), 0);
    }
    {
        // Rank 0 with NICOFF_NICS and NICOFF_PORT_BASE (no device needed):
        // it names the job after the kvsname and publishes its values.
        Peer peer({init_ok,
                   kvs_ok,
                   {"cmd=put kvsname=kvs_7_0 key=nicoff-job value=v1:4:50:0:*",
                    "cmd=put_result rc=0 msg=success\n"},
                   barrier_ok,
                   {"cmd=get kvsname=kvs_7_0 key=nicoff-job", "@put"},
                   {"cmd=finalize", "cmd=finalize_ack\n"}});
        const int rc = in_child({{"PMI_RANK", "0"},
                                 {"PMI_SIZE", "3"},
                                 {"NICOFF_NICS", "4"},
                                 {"NICOFF_PORT_BASE", "50"},
                                 {"PMI_FD", std::to_string(peer.fd())}},
                                [] {
                                    const nicoff::Job job = nicoff::Job::from_env();
                                    // "kvs_7_0." and 16 hex digits
                                    const bool ok = job.id().starts_with("kvs_7_0.") &&
                                                    job.id().size() == 8 + 16 && job.nics() == 4 &&
                                                    job.port_base() == 50;
                                    return ok ? 0 : 12;
                                });
        assert_int_equal(rc, 0);
        assert_int_equal(peer.verdict(), 0);
    }
    {
        // The launcher is gone at exit (an MPI library finalized): no error.
        Peer peer({init_ok,
                   kvs_ok,
                   barrier_ok,
                   {"cmd=get kvsname=kvs_7_0 key=nicoff-job",
                    "cmd=get_result rc=0 msg=success value=" + value + "\n"},
                   {"cmd=finalize", "@close"}});
        const int rc =
            in_child({{"PMI_RANK", "2"}, {"PMI_SIZE", "3"}, {"PMI_FD", std::to_string(peer.fd())}},
                     [] { return nicoff::Job::from_env().port() == 31 ? 0 : 13; });
        assert_int_equal(rc, 0);
        assert_int_equal(peer.verdict(), 0);
    }
    // PMI_FD must be a number; without PMI_FD nothing is asked.
    assert_int_equal(
        in_child({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"PMI_FD", "x"}},
                 [] { return error_of([] { (void)nicoff::Job::from_env(); }) == EINVAL ? 0 : 14; }),
        0);
    assert_int_equal(in_child({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"NICOFF_NICS", "2"}},
                              [] {
                                  const nicoff::Job job = nicoff::Job::from_env();
                                  return job.id().empty() && job.port_base() == 16 ? 0 : 15;
                              }),
                     0);
}

int clear_env(void **) {
    for (const char *v :
         {"PMI_RANK", "PMI_SIZE", "PMI_FD", "NICOFF_RANK", "NICOFF_SIZE", "NICOFF_NICS",
          "NICOFF_PORT_BASE", "NICOFF_JOB_ID", "NICOFF_CARD", "NICOFF_PORT", "NICOFF_PMI_TIMEOUT",
          "OMPI_COMM_WORLD_RANK", "MPI_LOCALNRANKS", "SLURM_NNODES", "SLURM_JOB_ID"})
        ::unsetenv(v);
    return 0;
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_conversation),
        cmocka_unit_test(test_reads_only_its_reply),
        cmocka_unit_test(test_bad_replies),
        cmocka_unit_test(test_out_of_step),
        cmocka_unit_test(test_get_errors),
        cmocka_unit_test(test_bad_fd),
        cmocka_unit_test(test_encoding),
        cmocka_unit_test(test_agree_rank0),
        cmocka_unit_test(test_agree_rank0_fails),
        cmocka_unit_test(test_agree_other_rank),
        cmocka_unit_test(test_agree_nothing_published),
        cmocka_unit_test(test_port_search),
        cmocka_unit_test(test_port_search_error),
        cmocka_unit_test_setup(test_from_env, clear_env),
    };
    return cmocka_run_group_tests_name("nicoff PMI", tests, nullptr, nullptr);
}
