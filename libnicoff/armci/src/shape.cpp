// libarmci-nicoff: ARMCI's strided arguments and local packing.
#include "shape.hpp"

#include <nicoff/strided.hpp>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

namespace nicoff::armci {

namespace {

[[noreturn]] void invalid(const std::string &what) {
    throw std::system_error(EINVAL, std::generic_category(), what);
}

std::vector<std::uint64_t> widen(const int *a, int n, const char *name) {
    std::vector<std::uint64_t> out;
    if (n > 0 && !a)
        invalid(std::string(name) + " is NULL");
    for (int i = 0; i < n; i++) {
        if (a[i] < 0)
            invalid(std::string(name) + "[" + std::to_string(i) + "] = " + std::to_string(a[i]) +
                    " is negative");
        out.push_back(static_cast<std::uint64_t>(a[i]));
    }
    return out;
}

} // namespace

std::uint64_t Shape::bytes() const {
    std::uint64_t n = 1;
    for (std::uint64_t c : count)
        if (__builtin_mul_overflow(n, c, &n))
            throw std::system_error(EOVERFLOW, std::generic_category(),
                                    "the counts' product overflows");
    return n;
}

Shape make_shape(const int *src_stride, const int *dst_stride, const int *count, int levels) {
    if (levels < 0 || levels > NICOFF_STRIDED_MAX_LEVELS)
        invalid("stride_levels = " + std::to_string(levels) + ", not in [0, " +
                std::to_string(NICOFF_STRIDED_MAX_LEVELS) + "]");
    Shape s;
    s.count = widen(count, levels + 1, "count");
    s.src_stride = widen(src_stride, levels, "src_stride_arr");
    s.dst_stride = widen(dst_stride, levels, "dst_stride_arr");
    return s;
}

std::uint64_t extent(std::span<const std::uint64_t> count, std::span<const std::uint64_t> stride) {
    for (std::uint64_t c : count)
        if (c == 0)
            return 0;
    std::uint64_t end = count[0];
    for (std::size_t i = 1; i < count.size(); i++) {
        std::uint64_t step = 0;
        if (__builtin_mul_overflow(count[i] - 1, stride[i - 1], &step) ||
            __builtin_add_overflow(end, step, &end))
            throw std::system_error(EOVERFLOW, std::generic_category(),
                                    "a side's extent overflows 64 bits");
    }
    return end;
}

std::vector<std::uint64_t> packed_strides(std::span<const std::uint64_t> count) {
    std::vector<std::uint64_t> stride;
    std::uint64_t block = count.empty() ? 0 : count[0];
    for (std::size_t i = 1; i < count.size(); i++) {
        stride.push_back(block);
        block *= count[i];
    }
    return stride;
}

void pack(const std::byte *base, std::span<const std::uint64_t> stride,
          std::span<const std::uint64_t> count, std::byte *packed) {
    const auto ps = packed_strides(count);
    for_each_chunk(count, {0, stride}, {0, ps},
                   [&](std::uint64_t from, std::uint64_t to, std::uint64_t n) {
                       std::memcpy(packed + to, base + from, n);
                   });
}

void unpack(const std::byte *packed, std::span<const std::uint64_t> count, std::byte *base,
            std::span<const std::uint64_t> stride) {
    const auto ps = packed_strides(count);
    for_each_chunk(count, {0, stride}, {0, ps},
                   [&](std::uint64_t to, std::uint64_t from, std::uint64_t n) {
                       std::memcpy(base + to, packed + from, n);
                   });
}

} // namespace nicoff::armci
