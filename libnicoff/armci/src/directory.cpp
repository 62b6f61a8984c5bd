// libarmci-nicoff: address to registered region.
#include "directory.hpp"

#include <cerrno>
#include <cstdio>
#include <string>
#include <system_error>

namespace nicoff::armci {

namespace {

[[noreturn]] void fail(int err, const std::string &what) {
    throw std::system_error(err, std::generic_category(), what);
}

std::string hex(std::uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof(b), "0x%llx", static_cast<unsigned long long>(v));
    return b;
}

std::string proc_range(std::uint32_t proc, std::size_t procs) {
    return "proc " + std::to_string(proc) + " is not in [0, " + std::to_string(procs) + ")";
}

} // namespace

void Directory::add(std::uint32_t proc, const Slice &s) {
    if (proc >= by_proc_.size())
        fail(EINVAL, proc_range(proc, by_proc_.size()));
    if (s.size == 0 || s.base + s.size < s.base)
        fail(EINVAL, "an empty or wrapping slice at " + hex(s.base));
    auto &m = by_proc_[proc];
    auto next = m.lower_bound(s.base);
    if (next != m.end() && next->first < s.base + s.size)
        fail(EEXIST, "a slice at " + hex(s.base) + " overlaps one at " + hex(next->first));
    if (next != m.begin()) {
        const Slice &prev = std::prev(next)->second;
        if (prev.base + prev.size > s.base)
            fail(EEXIST, "a slice at " + hex(s.base) + " overlaps one at " + hex(prev.base));
    }
    m.emplace(s.base, s);
}

bool Directory::remove(std::uint32_t proc, std::uint64_t base) {
    return proc < by_proc_.size() && by_proc_[proc].erase(base) == 1;
}

Place Directory::lookup(std::uint32_t proc, std::uint64_t addr, std::uint64_t len) const noexcept {
    if (proc >= by_proc_.size())
        return {};
    const auto &m = by_proc_[proc];
    auto it = m.upper_bound(addr);
    if (it == m.begin())
        return {};
    const Slice &s = std::prev(it)->second;
    const std::uint64_t off = addr - s.base;
    const std::uint64_t n = len ? len : 1;
    if (off >= s.size || n > s.size - off)
        return {};
    return {&s, off};
}

Place Directory::find(std::uint32_t proc, std::uint64_t addr, std::uint64_t len) const {
    if (proc >= by_proc_.size())
        fail(EINVAL, proc_range(proc, by_proc_.size()));
    const Place p = lookup(proc, addr, len);
    if (!p.slice)
        fail(EFAULT, "[" + hex(addr) + ", +" + std::to_string(len) + ") of proc " +
                         std::to_string(proc) + " is not inside one ARMCI allocation");
    return p;
}

} // namespace nicoff::armci
