// libnicoff-mpi: the environment variables that turn each offload on or off.
#include "runtime.hpp"

#include <cerrno>
#include <cstdlib>
#include <string_view>

namespace nicoff::mpi {

namespace {

// A switch: unset keeps the default; "0"/"1" only, anything else is an
// error naming the variable.
bool read_switch(const char *name, bool &out, std::string &error) {
    const char *v = std::getenv(name);
    if (!v)
        return true;
    const std::string_view s(v);
    if (s == "0" || s == "1") {
        out = s == "1";
        return true;
    }
    error = std::string(name) + "='" + v + "': expected 0 or 1";
    return false;
}

bool read_number(const char *name, std::uint64_t lo, std::uint64_t hi, std::uint64_t &out,
                 std::string &error) {
    const char *v = std::getenv(name);
    if (!v)
        return true;
    char *end = nullptr;
    errno = 0;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (*v < '0' || *v > '9' || *end || errno || n < lo || n > hi) {
        error = std::string(name) + "='" + v + "': expected a number from " + std::to_string(lo) +
                " to " + std::to_string(hi);
        return false;
    }
    out = n;
    return true;
}

} // namespace

Config Config::from_env(std::string &error) {
    Config c;
    std::uint64_t rounds = c.select_rounds;
    bool ok = read_switch("NICOFF_MPI", c.enabled, error) &&
              read_switch("NICOFF_MPI_BARRIER", c.barrier, error) &&
              read_switch("NICOFF_MPI_IBARRIER", c.ibarrier, error) &&
              read_switch("NICOFF_MPI_BCAST", c.bcast, error) &&
              read_switch("NICOFF_MPI_REPORT", c.report, error) &&
              read_number("NICOFF_MPI_SELECT_ROUNDS", 1, 10000, rounds, error) &&
              read_number("NICOFF_MPI_BCAST_MAX", 0, std::uint64_t{1} << 30, c.bcast_max, error);
    c.select_rounds = static_cast<unsigned>(rounds);
    if (ok) {
        if (const char *v = std::getenv("NICOFF_MPI_SELECT")) {
            const std::string_view s(v);
            if (s == "card") {
                c.select = Select::card;
            } else if (s == "time") {
                c.select = Select::time;
            } else {
                error = std::string("NICOFF_MPI_SELECT='") + v + "': expected card or time";
                ok = false;
            }
        }
    }
    if (!ok)
        c.enabled = false;
    return c;
}

} // namespace nicoff::mpi
