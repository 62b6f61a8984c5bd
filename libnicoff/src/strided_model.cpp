// The strided methods' names, seed 004's cost models and where they are
// cached, and the walk of a byte range of a shape: see <nicoff/strided.hpp>.
// Pure logic, tested on the host (tests/unit/test_strided.cpp).
#include <nicoff/strided.hpp>

#include "common.hpp"

#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace nicoff {

using detail::throw_errno;

namespace {

struct MethodName {
    StridedMethod method;
    std::string_view name;
};

// The one table of the methods' words.
constexpr std::array<MethodName, 4> method_names = {{
    {StridedMethod::nic, "nic"},
    {StridedMethod::hbna, "hbna"},
    {StridedMethod::naive, "naive"},
    {StridedMethod::automatic, "auto"},
}};

// The model's parameters by name, for the cache file.
struct Param {
    std::string_view name;
    double StridedModel::*field;
};

constexpr std::array<Param, 5> params = {{
    {"ts_nic", &StridedModel::ts_nic},
    {"ts_put", &StridedModel::ts_put},
    {"tn", &StridedModel::tn},
    {"ts_hbna", &StridedModel::ts_hbna},
    {"tm", &StridedModel::tm},
}};

} // namespace

std::string_view method_name(StridedMethod m) noexcept {
    for (const MethodName &n : method_names)
        if (n.method == m)
            return n.name;
    return "?";
}

std::optional<StridedMethod> parse_strided_method(std::string_view word) noexcept {
    for (const MethodName &n : method_names)
        if (n.name == word)
            return n.method;
    return std::nullopt;
}

double StridedModel::predict(StridedMethod m, std::uint64_t chunks,
                             std::uint64_t bytes) const noexcept {
    const double k = static_cast<double>(chunks), n = static_cast<double>(bytes);
    switch (m) {
    case StridedMethod::nic:
        return k * ts_nic + tn * n;
    case StridedMethod::naive:
        return k * ts_put + tn * n;
    case StridedMethod::hbna:
        return ts_hbna + tn * n + 2 * tm * n;
    case StridedMethod::automatic:
        break;
    }
    return std::numeric_limits<double>::infinity();
}

StridedMethod StridedModel::choose(std::uint64_t chunks, std::uint64_t bytes,
                                   bool hbna) const noexcept {
    StridedMethod best = StridedMethod::nic;
    double t = predict(best, chunks, bytes);
    for (const StridedMethod m : {StridedMethod::naive, StridedMethod::hbna}) {
        if (m == StridedMethod::hbna && !hbna)
            continue;
        const double u = predict(m, chunks, bytes);
        if (u < t) {
            best = m;
            t = u;
        }
    }
    return best;
}

std::string StridedModel::to_text() const {
    std::string out;
    for (const Param &p : params) {
        std::array<char, 64> buf{};
        const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), this->*p.field);
        out.append(p.name).append(" ").append(buf.data(), r.ptr).append("\n");
    }
    return out;
}

std::optional<StridedModel> StridedModel::from_text(std::string_view text) {
    StridedModel m;
    std::array<bool, params.size()> seen{};
    while (!text.empty()) {
        const std::string_view line = detail::take_field(text, '\n');
        if (line.empty())
            continue;
        const std::size_t sp = line.find(' ');
        if (sp == std::string_view::npos)
            return std::nullopt;
        const std::string_view name = line.substr(0, sp), value = line.substr(sp + 1);
        std::size_t i = 0;
        while (i < params.size() && params[i].name != name)
            i++;
        if (i == params.size())
            return std::nullopt;
        double v = 0;
        const auto r = std::from_chars(value.data(), value.data() + value.size(), v);
        if (r.ec != std::errc{} || r.ptr != value.data() + value.size() || !std::isfinite(v) ||
            v < 0)
            return std::nullopt;
        m.*params[i].field = v;
        seen[i] = true;
    }
    for (const bool s : seen)
        if (!s)
            return std::nullopt;
    return m;
}

std::filesystem::path strided_cache_path(std::uint32_t card) {
    std::filesystem::path dir;
    const char *xdg = std::getenv("XDG_CACHE_HOME");
    const char *home = std::getenv("HOME");
    if (xdg && *xdg == '/')
        dir = xdg;
    else if (home && *home)
        dir = std::filesystem::path(home) / ".cache";
    else
        throw_errno(EINVAL, "strided: no cache directory (XDG_CACHE_HOME, HOME)");
    return dir / "nicoff" / ("strided-card" + std::to_string(card));
}

ShapeSize shape_size(std::span<const std::uint64_t> count) {
    if (count.empty() || count.size() > NICOFF_STRIDED_MAX_LEVELS + 1)
        throw_errno(EINVAL, "strided shape: 0 to 8 levels");
    ShapeSize s{1, count[0]};
    for (std::size_t i = 1; i < count.size(); i++) {
        if (__builtin_mul_overflow(s.chunks, count[i], &s.chunks))
            throw_errno(EOVERFLOW, "strided shape: the counts' product overflows");
    }
    if (__builtin_mul_overflow(s.chunks, count[0], &s.bytes))
        throw_errno(EOVERFLOW, "strided shape: the counts' product overflows");
    if (s.bytes == 0)
        s.chunks = 0;
    return s;
}

void for_each_piece(std::span<const std::uint64_t> count, const StridedSide &side,
                    std::uint64_t from, std::uint64_t len,
                    const std::function<void(std::uint64_t, std::uint64_t)> &fn) {
    const ShapeSize sz = shape_size(count);
    if (side.stride.size() < count.size() - 1)
        throw_errno(EINVAL, "strided shape: a stride array shorter than the levels");
    if (from > sz.bytes || len > sz.bytes - from)
        throw_errno(ERANGE, "strided piece: beyond the shape's bytes");
    if (len == 0)
        return;
    const std::size_t levels = count.size() - 1;
    // The chunk holding byte `from`, as a number in the counts' mixed radix.
    std::array<std::uint64_t, NICOFF_STRIDED_MAX_LEVELS + 1> idx{};
    std::uint64_t c = from / count[0], within = from % count[0];
    for (std::size_t i = 1; i <= levels; i++) {
        idx[i] = c % count[i];
        c /= count[i];
    }
    for (;;) {
        std::uint64_t off = side.offset;
        for (std::size_t i = 1; i <= levels; i++)
            off += idx[i] * side.stride[i - 1];
        const std::uint64_t n = std::min(count[0] - within, len);
        fn(off + within, n);
        len -= n;
        within = 0;
        if (len == 0)
            return;
        std::size_t i = 1;
        for (; i <= levels; i++) {
            if (++idx[i] < count[i])
                break;
            idx[i] = 0;
        }
    }
}

} // namespace nicoff
