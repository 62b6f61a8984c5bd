// A module tunable (Documentation/tunables.md) changed for the length of a
// scope, e.g. fault_drop_ppm for one case of a suite.
#ifndef NICOFF_BENCH_TUNABLE_HPP
#define NICOFF_BENCH_TUNABLE_HPP

#include <string>

namespace nicoff::bench {

inline constexpr const char *tunable_dir = "/sys/module/nicoff/parameters";

// The value of dir/name without its trailing newline; throws
// std::system_error (errno) if it cannot be read.
std::string read_tunable(const std::string &name, const std::string &dir = tunable_dir);
// Writes value to dir/name; throws std::system_error with the kernel's
// errno (EACCES when not root, EINVAL or ERANGE for a value out of range).
void write_tunable(const std::string &name, const std::string &value,
                   const std::string &dir = tunable_dir);

// Sets a tunable and puts its previous value back on destruction, so that a
// suite that throws halfway leaves the module as it found it; SIGINT,
// SIGTERM or SIGHUP meanwhile put it back too, then end the process as they
// would have.  One override at a time (a second one throws EBUSY).
class TunableOverride {
public:
    TunableOverride(std::string name, const std::string &value, std::string dir = tunable_dir);
    ~TunableOverride();
    TunableOverride(const TunableOverride &) = delete;
    TunableOverride &operator=(const TunableOverride &) = delete;
    const std::string &previous() const noexcept { return previous_; }

private:
    std::string name_, dir_, previous_;
};

} // namespace nicoff::bench

#endif // NICOFF_BENCH_TUNABLE_HPP
