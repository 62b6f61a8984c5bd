// nicoff-bench framework: suite registry, options, statistics, output.
#include "bench.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>

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

std::uint64_t Options::u64(const std::string &name) const {
    const std::string &v = str(name);
    std::uint64_t out = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || end != v.data() + v.size() || v.empty())
        throw std::invalid_argument("--" + name + ": not an unsigned integer: '" + v + "'");
    return out;
}

double Options::number(const std::string &name) const {
    const std::string &v = str(name);
    double out = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || end != v.data() + v.size() || v.empty() || !std::isfinite(out) ||
        out < 0)
        throw std::invalid_argument("--" + name + ": not a non-negative number: '" + v + "'");
    return out;
}

// ----------------------------------------------------------------- records --

Record Context::record(std::string case_name, std::optional<std::string> method, std::string metric,
                       double value, std::string unit) const {
    Record r;
    r.suite = suite_;
    r.case_name = std::move(case_name);
    r.method = std::move(method);
    r.metric = std::move(metric);
    r.value = value;
    r.unit = std::move(unit);
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
    const std::vector<std::string> head = {"suite",  "case",  "method", "nodes", "bytes",
                                           "metric", "value", "unit",   "runs"};
    std::vector<std::vector<std::string>> rows;
    rows.push_back(head);
    for (const auto &r : records)
        rows.push_back({r.suite, r.case_name, r.method.value_or("-"), opt_str(r.nodes),
                        opt_str(r.bytes), r.metric, format_value(r.value), r.unit,
                        opt_str(r.runs)});
    std::vector<std::size_t> width(head.size(), 0);
    for (const auto &row : rows)
        for (std::size_t i = 0; i < row.size(); i++)
            width[i] = std::max(width[i], row[i].size());
    // Numbers right-aligned, words left-aligned.
    const std::vector<bool> right = {false, false, false, true, true, false, true, false, true};
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

std::string json_string(const std::string &s) {
    std::string out = "\"";
    for (const unsigned char c : s) {
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            if (c < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof(buf), "\\u%04x", c);
                out += buf;
            } else {
                out += static_cast<char>(c);
            }
        }
    }
    return out + "\"";
}

std::string json_number(double v) {
    if (!std::isfinite(v))
        return "null";
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
    return ec == std::errc() ? std::string(buf, end) : "null";
}

std::string json_opt(const std::optional<std::int64_t> &v) {
    return v ? std::to_string(*v) : "null";
}

std::string json_opt(const std::optional<std::string> &v) { return v ? json_string(*v) : "null"; }

} // namespace

std::string format_json(const std::vector<Record> &records) {
    std::string out = "[";
    for (std::size_t i = 0; i < records.size(); i++) {
        const Record &r = records[i];
        out += i ? ",\n " : "\n ";
        out += "{\"suite\": " + json_string(r.suite) + ", \"case\": " + json_string(r.case_name) +
               ", \"method\": " + json_opt(r.method) + ", \"nodes\": " + json_opt(r.nodes) +
               ", \"bytes\": " + json_opt(r.bytes) + ", \"metric\": " + json_string(r.metric) +
               ", \"value\": " + json_number(r.value) + ", \"unit\": " + json_string(r.unit) +
               ", \"runs\": " + json_opt(r.runs) + "}";
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

} // namespace nicoff::bench
