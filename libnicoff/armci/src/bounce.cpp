// libarmci-nicoff: BounceSpace, see bounce.hpp.
#include "bounce.hpp"

#include <cassert>
#include <iterator>

namespace nicoff::armci {

namespace {

std::uint64_t rounded(std::uint64_t len) {
    return (len + BounceSpace::align - 1) / BounceSpace::align * BounceSpace::align;
}

} // namespace

BounceSpace::BounceSpace(std::uint64_t size) : size_(size / align * align), free_bytes_(size_) {
    if (size_)
        free_[0] = size_;
}

std::optional<std::uint64_t> BounceSpace::take(std::uint64_t len) {
    if (len == 0 || len > size_)
        return std::nullopt;
    len = rounded(len);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
        if (it->second < len)
            continue;
        const std::uint64_t off = it->first, rest = it->second - len;
        free_.erase(it);
        if (rest)
            free_[off + len] = rest;
        free_bytes_ -= len;
        return off;
    }
    return std::nullopt;
}

void BounceSpace::give(std::uint64_t off, std::uint64_t len) {
    len = rounded(len);
    auto next = free_.lower_bound(off);
    assert(next == free_.end() || off + len <= next->first);
    free_bytes_ += len;
    if (next != free_.end() && next->first == off + len) {
        len += next->second;
        next = free_.erase(next);
    }
    if (next != free_.begin()) {
        const auto prev = std::prev(next);
        assert(prev->first + prev->second <= off);
        if (prev->first + prev->second == off) {
            prev->second += len;
            return;
        }
    }
    free_.emplace_hint(next, off, len);
}

} // namespace nicoff::armci
