// nicoff-bench framework: suite registry, options, statistics, output.
#include "bench.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <exception>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

namespace nicoff::bench {

// ------------------------------------------------------------------ suites --

namespace {
std::vector<Suite> &registry() {
    static std::vector<Suite> all;
    return all;
}
} // namespace

const std::vector<Suite> &suites() { return registry(); }

SuiteRegistrar::SuiteRegistrar(Suite s) {
    auto &all = registry();
    auto pos = std::lower_bound(all.begin(), all.end(), s.name,
                                [](const Suite &a, const std::string &n) { return a.name < n; });
    all.insert(pos, std::move(s));
}

std::vector<OptionSpec> global_options() {
    return {
        {"json", "write the records as a JSON array to FILE", ""},
        {"card", "card number (/dev/nicoffN)", "0"},
    };
}

// ----------------------------------------------------------------- options --

Options::Options(std::vector<OptionSpec> specs, std::map<std::string, std::string> given)
    : specs_(std::move(specs)), given_(std::move(given)) {}

const OptionSpec &Options::spec(const std::string &name) const {
    for (const auto &s : specs_)
        if (s.name == name)
            return s;
    throw std::logic_error("nicoff-bench: undeclared option --" + name);
}

const std::string &Options::str(const std::string &name) const {
    const OptionSpec &s = spec(name);
    auto it = given_.find(name);
    return it != given_.end() ? it->second : s.default_value;
}

namespace {
std::uint64_t parse_u64(const std::string &name, const std::string &v) {
    std::uint64_t out = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || end != v.data() + v.size() || v.empty())
        throw std::invalid_argument("--" + name + ": not an unsigned integer: '" + v + "'");
    return out;
}
} // namespace

std::uint64_t Options::u64(const std::string &name) const { return parse_u64(name, str(name)); }

double Options::number(const std::string &name) const {
    const std::string &v = str(name);
    double out = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || end != v.data() + v.size() || v.empty() || !std::isfinite(out) ||
        out < 0)
        throw std::invalid_argument("--" + name + ": not a non-negative number: '" + v + "'");
    return out;
}

std::vector<std::string> Options::list(const std::string &name) const {
    std::vector<std::string> v;
    std::stringstream ss(str(name));
    std::string item;
    while (std::getline(ss, item, ','))
        if (!item.empty())
            v.push_back(item);
    return v;
}

std::vector<std::uint64_t> Options::u64_list(const std::string &name) const {
    std::vector<std::uint64_t> v;
    for (const std::string &item : list(name))
        v.push_back(parse_u64(name, item));
    if (v.empty())
        throw std::invalid_argument("--" + name + ": empty list");
    return v;
}

// ----------------------------------------------------------------- records --

Record Context::record(std::string case_name, std::optional<std::string> method, std::string metric,
                       double value, std::string unit, const Fields &fields) const {
    Record r;
    r.suite = suite_;
    r.case_name = std::move(case_name);
    r.method = std::move(method);
    r.nodes = fields.nodes;
    r.bytes = fields.bytes;
    r.metric = std::move(metric);
    r.value = value;
    r.unit = std::move(unit);
    r.runs = fields.runs;
    r.chunk = fields.chunk;
    r.channels = fields.channels;
    return r;
}

namespace {

std::string format_value(double v) {
    if (!std::isfinite(v))
        return "-";
    char buf[64];
    const double a = std::fabs(v);
    const char *fmt = a >= 1e5 ? "%.0f" : a >= 100 ? "%.1f" : a >= 1 ? "%.3f" : "%.4f";
    std::snprintf(buf, sizeof(buf), fmt, v);
    return buf;
}

std::string opt_str(const std::optional<std::int64_t> &v) { return v ? std::to_string(*v) : "-"; }

} // namespace

void Context::add(Record r) {
    std::fprintf(stderr, "  %s/%s/%s %s = %s %s\n", r.suite.c_str(), r.case_name.c_str(),
                 r.method ? r.method->c_str() : "-", r.metric.c_str(),
                 format_value(r.value).c_str(), r.unit.c_str());
    records_.push_back(std::move(r));
}

std::string format_table(const std::vector<Record> &records) {
    // A chunk or channels column only where a record has one.
    const bool chunks =
        std::any_of(records.begin(), records.end(), [](const Record &r) { return r.chunk; });
    const bool channels =
        std::any_of(records.begin(), records.end(), [](const Record &r) { return r.channels; });
    std::vector<std::string> head = {"suite",  "case",  "method", "nodes", "bytes",
                                     "metric", "value", "unit",   "runs"};
    // Numbers right-aligned, words left-aligned.
    std::vector<bool> right = {false, false, false, true, true, false, true, false, true};
    if (chunks) {
        head.push_back("chunk");
        right.push_back(true);
    }
    if (channels) {
        head.push_back("channels");
        right.push_back(true);
    }
    std::vector<std::vector<std::string>> rows;
    rows.push_back(head);
    for (const auto &r : records) {
        rows.push_back({r.suite, r.case_name, r.method.value_or("-"), opt_str(r.nodes),
                        opt_str(r.bytes), r.metric, format_value(r.value), r.unit,
                        opt_str(r.runs)});
        if (chunks)
            rows.back().push_back(opt_str(r.chunk));
        if (channels)
            rows.back().push_back(opt_str(r.channels));
    }
    std::vector<std::size_t> width(head.size(), 0);
    for (const auto &row : rows)
        for (std::size_t i = 0; i < row.size(); i++)
            width[i] = std::max(width[i], row[i].size());
    std::string out;
    for (const auto &row : rows) {
        std::string line;
        for (std::size_t i = 0; i < row.size(); i++) {
            const std::string pad(width[i] - row[i].size(), ' ');
            line += right[i] ? pad + row[i] : row[i] + pad;
            if (i + 1 < row.size())
                line += "  ";
        }
        while (!line.empty() && line.back() == ' ')
            line.pop_back();
        out += line + "\n";
    }
    return out;
}

// -------------------------------------------------------------------- json --

namespace {

using Json = nlohmann::ordered_json;

// An absent optional field is null, as a value that is not finite is.
template <typename T>
Json json_opt(const std::optional<T> &v) {
    return v ? Json(*v) : Json();
}

} // namespace

// One record a line, its fields in a fixed order (tools/results.py reads them),
// a suite's extra fields last.
std::string format_json(const std::vector<Record> &records) {
    std::string out = "[";
    for (std::size_t i = 0; i < records.size(); i++) {
        const Record &r = records[i];
        Json j = {
            {"suite", r.suite},
            {"case", r.case_name},
            {"method", json_opt(r.method)},
            {"nodes", json_opt(r.nodes)},
            {"bytes", json_opt(r.bytes)},
            {"metric", r.metric},
            {"value", std::isfinite(r.value) ? Json(r.value) : Json()},
            {"unit", r.unit},
            {"runs", json_opt(r.runs)},
        };
        if (r.chunk)
            j["chunk"] = *r.chunk;
        if (r.channels)
            j["channels"] = *r.channels;
        out += (i ? ",\n " : "\n ") + j.dump();
    }
    out += records.empty() ? "]\n" : "\n]\n";
    return out;
}

// ------------------------------------------------------------------- stats --

Summary summarize(std::vector<double> v) {
    Summary s;
    s.n = v.size();
    if (v.empty())
        return s;
    std::sort(v.begin(), v.end());
    s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    const std::size_t mid = v.size() / 2;
    s.median = v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
    const auto p99 = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(v.size())));
    s.p99 = v[std::min(v.size() - 1, p99 ? p99 - 1 : 0)];
    s.min = v.front();
    s.max = v.back();
    return s;
}

void fail(int err, const std::string &what) {
    throw std::system_error(err, std::generic_category(), what);
}

// ----------------------------------------------------------- processes --

void *map_shared(std::size_t bytes) {
    void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        fail(errno, "mmap");
    return p;
}

void unmap_shared(void *p, std::size_t bytes) noexcept { ::munmap(p, bytes); }

void Children::spawn(const std::function<int()> &body) {
    // Nothing buffered may be written twice, by the child too.
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0)
        fail(errno, "fork");
    if (pid > 0) {
        pids_.push_back(pid);
        return;
    }
    int code = 1;
    try {
        code = body();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "nicoff-bench: child %d: %s\n", static_cast<int>(::getpid()),
                     e.what());
    }
    std::fflush(nullptr);
    ::_exit(code);
}

Children::Outcome Children::reap(double timeout_s) {
    const std::uint64_t deadline =
        timeout_s > 0 ? now_ns() + static_cast<std::uint64_t>(timeout_s * 1e9) : 0;
    Outcome out = Outcome::ok;
    bool killed = false;
    while (!pids_.empty()) {
        int st = 0;
        // Without a deadline, sleep in waitpid() rather than poll: the
        // ranks being timed share the CPUs with this process.
        const pid_t p = ::waitpid(-1, &st, deadline ? WNOHANG : 0);
        if (p < 0 && errno != EINTR)
            break;
        const auto it = std::find(pids_.begin(), pids_.end(), p);
        if (p > 0 && it != pids_.end()) {
            pids_.erase(it);
            if ((!WIFEXITED(st) || WEXITSTATUS(st)) && out == Outcome::ok)
                out = Outcome::failed;
        }
        if (!killed && out == Outcome::ok && deadline && now_ns() > deadline)
            out = Outcome::timed_out;
        if (!killed && out != Outcome::ok) {
            for (const pid_t q : pids_)
                ::kill(q, SIGKILL);
            killed = true;
        }
        if (p == 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return out;
}

Children::~Children() {
    for (const pid_t p : pids_)
        ::kill(p, SIGKILL);
    for (const pid_t p : pids_)
        ::waitpid(p, nullptr, 0);
}

} // namespace nicoff::bench
