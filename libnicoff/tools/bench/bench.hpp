// nicoff-bench: a small benchmark framework.
//
//   nicoff-bench <suite> [--json FILE] [--card N] [suite options]
//
// A suite is one .cpp file in this directory that registers itself:
//
//   static const nicoff::bench::SuiteRegistrar reg{{
//       "p2p", "what it measures",
//       {{"size", "bytes per message", "4096"}},   // its options and defaults
//       [](nicoff::bench::Context &ctx) { ...; ctx.add(record); },
//   }};
//
// and produces records {"suite","case","method","nodes","bytes","metric",
// "value","unit","runs"} (absent fields are JSON null), and "chunk" and
// "channels" where a suite sets them.  The framework
// parses the options, prints an aligned table on stdout and writes the
// records as a JSON array to --json FILE.  The build links every .cpp of
// this directory into nicoff-bench, so a new suite needs no other change.
#ifndef NICOFF_BENCH_BENCH_HPP
#define NICOFF_BENCH_BENCH_HPP

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

namespace nicoff::bench {

struct Record {
    std::string suite;
    std::string case_name;
    std::optional<std::string> method;
    std::optional<std::int64_t> nodes;
    std::optional<std::int64_t> bytes;
    std::string metric;
    double value = 0;
    std::string unit;
    std::optional<std::int64_t> runs;
    // A suite's extra field: the contiguous chunk of a strided transfer
    // (count[0], in bytes).  Absent from the JSON unless set, so that the
    // other suites' records keep their nine fields.
    std::optional<std::int64_t> chunk;
    // The bcast suite's: the group's broadcast channels (its channel sweep).
    std::optional<std::int64_t> channels;
};

// A record's optional fields by name, e.g. {.nodes = 2, .bytes = 8, .runs = n}.
struct Fields {
    std::optional<std::int64_t> nodes{}, bytes{}, runs{}, chunk{}, channels{};
};

struct OptionSpec {
    std::string name; // without the leading "--"
    std::string help;
    std::string default_value;
};

// The command line's --name value pairs, with the declared defaults.
class Options {
public:
    Options(std::vector<OptionSpec> specs, std::map<std::string, std::string> given);
    const std::string &str(const std::string &name) const;
    // Throw std::invalid_argument with the option's name on a bad value.
    std::uint64_t u64(const std::string &name) const;
    double number(const std::string &name) const;
    // A comma-separated option's items, empty ones skipped.
    std::vector<std::string> list(const std::string &name) const;
    // Its items as unsigned integers; throws if there are none or one is not.
    std::vector<std::uint64_t> u64_list(const std::string &name) const;

private:
    const OptionSpec &spec(const std::string &name) const;
    std::vector<OptionSpec> specs_;
    std::map<std::string, std::string> given_;
};

class Context {
public:
    Context(std::string suite, Options opts) : suite_(std::move(suite)), opts_(std::move(opts)) {}
    const Options &opts() const noexcept { return opts_; }
    const std::string &suite() const noexcept { return suite_; }
    // A record of this suite.
    Record record(std::string case_name, std::optional<std::string> method, std::string metric,
                  double value, std::string unit, const Fields &fields = {}) const;
    void add(Record r); // also prints it on stderr as progress
    void add(std::string case_name, std::optional<std::string> method, std::string metric,
             double value, std::string unit, const Fields &fields = {}) {
        add(record(std::move(case_name), std::move(method), std::move(metric), value,
                   std::move(unit), fields));
    }
    const std::vector<Record> &records() const noexcept { return records_; }

private:
    std::string suite_;
    Options opts_;
    std::vector<Record> records_;
};

struct Suite {
    std::string name;
    std::string description;
    std::vector<OptionSpec> options;
    std::function<void(Context &)> run; // throws on failure
};

const std::vector<Suite> &suites();
struct SuiteRegistrar {
    explicit SuiteRegistrar(Suite s);
};

// Options every suite has.
std::vector<OptionSpec> global_options();

// Output.
std::string format_table(const std::vector<Record> &records);
std::string format_json(const std::vector<Record> &records);

// Measurement helpers.
inline std::uint64_t now_ns() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
}

// No completion for this long (10 s): a suite gives up on the cards.
inline constexpr std::uint64_t stall_ns = 10'000'000'000;

// A suite's methods: each value of its enum with the name its records use.
template <class E>
struct Named {
    E value;
    const char *name;
};

struct Summary {
    double mean = 0, median = 0, p99 = 0, min = 0, max = 0;
    std::size_t n = 0;
};
Summary summarize(std::vector<double> samples);

// A suite's failure: std::system_error(err, what), which main() reports.
[[noreturn]] void fail(int err, const std::string &what);

// ------------------------------------------------------- multi-process --
// A suite that forks its ranks or contenders puts what they share in a
// SharedMem<T> and runs them as Children.

// Anonymous MAP_SHARED memory; map_shared() throws on failure.
void *map_shared(std::size_t bytes);
void unmap_shared(void *p, std::size_t bytes) noexcept;

// One value-initialised T that forked processes see as it is now.
template <class T>
class SharedMem {
public:
    SharedMem() : p_(new (map_shared(sizeof(T))) T{}) {}
    ~SharedMem() {
        p_->~T();
        unmap_shared(p_, sizeof(T));
    }
    SharedMem(const SharedMem &) = delete;
    SharedMem &operator=(const SharedMem &) = delete;
    T *get() const noexcept { return p_; }
    T *operator->() const noexcept { return p_; }

private:
    T *p_;
};

// The forked processes of one run; any not reaped are killed on
// destruction (a suite that throws leaves none behind).
class Children {
public:
    enum class Outcome { ok, failed, timed_out };
    Children() = default;
    ~Children();
    Children(const Children &) = delete;
    Children &operator=(const Children &) = delete;
    // Runs body in a new process, which exits with what body returns (1 if
    // it throws: the exception's message goes to stderr).
    void spawn(const std::function<int()> &body);
    // Waits for every child.  The first to fail (non-zero exit or signal),
    // or timeout_s (0: none) running out, gets the others killed: they
    // would wait for it forever.
    Outcome reap(double timeout_s = 0);

private:
    std::vector<pid_t> pids_;
};

} // namespace nicoff::bench

#endif // NICOFF_BENCH_BENCH_HPP
