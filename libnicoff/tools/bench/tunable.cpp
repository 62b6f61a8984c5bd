// Module tunables through /sys/module/nicoff/parameters (see tunable.hpp).
#include "tunable.hpp"

#include "bench.hpp"

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>

#include <fcntl.h>
#include <unistd.h>

namespace nicoff::bench {

namespace {

// Closes a descriptor on every way out.
struct Fd {
    int fd;
    ~Fd() {
        if (fd >= 0)
            ::close(fd);
    }
};

// What a signal handler needs to put the tunable back, prepared beforehand:
// it may only make async-signal-safe calls (open, write, close).
struct Restore {
    std::array<char, 4096> path{};
    std::array<char, 256> text{};
    std::size_t len = 0;
};
Restore restore;
volatile std::sig_atomic_t restore_armed = 0;

constexpr std::array<int, 3> restore_signals = {SIGINT, SIGTERM, SIGHUP};
std::array<struct sigaction, restore_signals.size()> saved_actions;

void restore_on_signal(int sig) {
    if (restore_armed) {
        restore_armed = 0;
        const int fd = ::open(restore.path.data(), O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (fd >= 0) {
            (void)!::write(fd, restore.text.data(), restore.len);
            ::close(fd);
        }
    }
    // Die of the signal as if nothing had caught it.
    ::signal(sig, SIG_DFL);
    ::raise(sig);
}

} // namespace

std::string read_tunable(const std::string &name, const std::string &dir) {
    const std::string path = dir + "/" + name;
    const Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (f.fd < 0)
        fail(errno, "cannot read " + path);
    std::string out;
    char buf[256];
    for (;;) {
        const ssize_t n = ::read(f.fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            fail(errno, "cannot read " + path);
        if (n == 0)
            break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == ' '))
        out.pop_back();
    return out;
}

void write_tunable(const std::string &name, const std::string &value, const std::string &dir) {
    const std::string path = dir + "/" + name;
    // O_TRUNC as a shell redirection does: sysfs ignores it, a plain file needs it.
    const Fd f{::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC)};
    if (f.fd < 0)
        fail(errno, "cannot write " + path + (errno == EACCES ? " (not root?)" : ""));
    // A parameter takes its whole value in one write(2).
    const std::string text = value + "\n";
    const ssize_t n = ::write(f.fd, text.data(), text.size());
    if (n < 0)
        fail(errno, "cannot set " + path + " to " + value);
    if (static_cast<std::size_t>(n) != text.size())
        fail(EIO, "short write to " + path);
}

TunableOverride::TunableOverride(std::string name, const std::string &value, std::string dir)
    : name_(std::move(name)), dir_(std::move(dir)), previous_(read_tunable(name_, dir_)) {
    if (restore_armed)
        fail(EBUSY, "a tunable is overridden already; cannot override " + name_ + " too");
    const std::string path = dir_ + "/" + name_, text = previous_ + "\n";
    if (path.size() >= restore.path.size() || text.size() > restore.text.size())
        fail(ENAMETOOLONG, "cannot override " + path);
    write_tunable(name_, value, dir_);
    std::memcpy(restore.path.data(), path.c_str(), path.size() + 1);
    std::memcpy(restore.text.data(), text.data(), text.size());
    restore.len = text.size();
    restore_armed = 1;
    struct sigaction sa {};
    sa.sa_handler = restore_on_signal;
    sigemptyset(&sa.sa_mask);
    for (std::size_t i = 0; i < restore_signals.size(); i++) {
        ::sigaction(restore_signals[i], nullptr, &saved_actions[i]);
        // A signal the process ignores (nohup) stays ignored.
        if (saved_actions[i].sa_handler != SIG_IGN)
            ::sigaction(restore_signals[i], &sa, nullptr);
    }
}

TunableOverride::~TunableOverride() {
    for (std::size_t i = 0; i < restore_signals.size(); i++)
        ::sigaction(restore_signals[i], &saved_actions[i], nullptr);
    restore_armed = 0;
    try {
        write_tunable(name_, previous_, dir_);
    } catch (const std::exception &e) {
        // A destructor cannot throw; the user must know the module is left changed.
        std::fprintf(stderr, "nicoff-bench: %s is left changed, not back to %s: %s\n",
                     name_.c_str(), previous_.c_str(), e.what());
    }
}

} // namespace nicoff::bench
