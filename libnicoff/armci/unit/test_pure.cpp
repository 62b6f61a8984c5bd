// libarmci-nicoff's pure parts on the host: address translation, ARMCI's
// strided argument checks, packing, the bounce buffer's space,
// NICOFF_ARMCI_STRIDED and NICOFF_ARMCI_BOUNCE.
#include "bounce.hpp"
#include "config.hpp"
#include "directory.hpp"
#include "handle.hpp"
#include "shape.hpp"
#include "test_errors.hpp"

#include <cerrno>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

// Last: cmocka defines a macro fail(), a name the C++ headers use.
#include "cmocka.hpp"

namespace {

using nicoff::test::error_of;
namespace a = nicoff::armci;

a::Slice slice(std::uint64_t base, std::uint64_t size, std::uint32_t rkey) {
    a::Slice s;
    s.base = base;
    s.size = size;
    s.region = {1, 17, rkey};
    return s;
}

void test_directory(void **) {
    a::Directory d(3);
    d.add(1, slice(0x10000, 0x1000, 7));
    d.add(1, slice(0x11000, 0x100, 8));  // adjacent, not overlapping
    d.add(2, slice(0x10000, 0x1000, 9)); // same address in another process
    // Inside, to the last byte.
    a::Place p = d.find(1, 0x10010, 0x10);
    assert_int_equal(p.slice->region.rkey, 7);
    assert_int_equal(p.offset, 0x10);
    p = d.find(1, 0x10000, 0x1000);
    assert_int_equal(p.offset, 0);
    p = d.find(1, 0x110ff, 1);
    assert_int_equal(p.slice->region.rkey, 8);
    assert_int_equal(p.offset, 0xff);
    assert_int_equal(d.find(2, 0x10fff, 0).slice->region.rkey, 9);
    // One byte past, straddling two slices, below all, wrapping, the wrong
    // process, a process out of range.
    assert_int_equal(error_of([&] { d.find(1, 0x10fff, 2); }), EFAULT);
    assert_int_equal(error_of([&] { d.find(1, 0x110ff, 2); }), EFAULT);
    assert_int_equal(error_of([&] { d.find(1, 0xffff, 1); }), EFAULT);
    assert_int_equal(error_of([&] { d.find(1, 0x10010, ~0ull); }), EFAULT);
    assert_int_equal(error_of([&] { d.find(0, 0x10010, 1); }), EFAULT);
    assert_int_equal(error_of([&] { d.find(3, 0x10010, 1); }), EINVAL);
    assert_null(d.lookup(3, 0x10010, 1).slice);
    // Overlaps, empty and wrapping slices are refused.
    assert_int_equal(error_of([&] { d.add(1, slice(0x10800, 0x1000, 1)); }), EEXIST);
    assert_int_equal(error_of([&] { d.add(1, slice(0xf800, 0x1000, 1)); }), EEXIST);
    assert_int_equal(error_of([&] { d.add(1, slice(0x20000, 0, 1)); }), EINVAL);
    assert_int_equal(error_of([&] { d.add(1, slice(~0ull - 4, 16, 1)); }), EINVAL);
    assert_int_equal(error_of([&] { d.add(5, slice(0x20000, 16, 1)); }), EINVAL);
    // Removal forgets exactly that slice.
    assert_true(d.remove(1, 0x10000));
    assert_false(d.remove(1, 0x10000));
    assert_int_equal(error_of([&] { d.find(1, 0x10010, 1); }), EFAULT);
    assert_int_equal(d.find(1, 0x11000, 1).slice->region.rkey, 8);
}

void test_shape_checks(void **) {
    int count[10] = {8, 2, 3, 1, 1, 1, 1, 1, 1, 1};
    int stride[9] = {16, 64, 64, 64, 64, 64, 64, 64, 64};
    const a::Shape s = a::make_shape(stride, stride, count, 2);
    assert_int_equal(s.count.size(), 3);
    assert_int_equal(s.bytes(), 48);
    // 8 bytes, then 16 bytes apart, then 64: ends at 2*64 + 16 + 8.
    assert_int_equal(a::extent(s.count, s.src_stride), 152);
    a::make_shape(stride, stride, count, 8);
    assert_int_equal(error_of([&] { a::make_shape(stride, stride, count, 9); }), EINVAL);
    assert_int_equal(error_of([&] { a::make_shape(stride, stride, count, -1); }), EINVAL);
    int neg[3] = {8, -1, 2};
    assert_int_equal(error_of([&] { a::make_shape(stride, stride, neg, 2); }), EINVAL);
    int negs[2] = {-16, 64};
    assert_int_equal(error_of([&] { a::make_shape(negs, stride, count, 2); }), EINVAL);
    assert_int_equal(error_of([&] { a::make_shape(nullptr, stride, count, 2); }), EINVAL);
    a::make_shape(nullptr, nullptr, count, 0); // no strides needed
    // A zero count moves nothing and covers nothing.
    int zero[3] = {8, 0, 2};
    const a::Shape z = a::make_shape(stride, stride, zero, 2);
    assert_int_equal(z.bytes(), 0);
    assert_int_equal(a::extent(z.count, z.src_stride), 0);
    // Extents past 64 bits.
    const std::uint64_t big_count[3] = {8, 1ull << 40, 1ull << 40};
    const std::uint64_t big_stride[2] = {1ull << 20, 1ull << 62};
    assert_int_equal(error_of([&] { a::extent(big_count, big_stride); }), EOVERFLOW);
}

void test_pack(void **) {
    std::mt19937 rng(16);
    for (int round = 0; round < 200; round++) {
        const int levels = static_cast<int>(rng() % 4);
        std::vector<int> count(static_cast<std::size_t>(levels) + 1), stride(levels ? levels : 1);
        count[0] = 1 + static_cast<int>(rng() % 9);
        int block = count[0];
        for (int i = 1; i <= levels; i++) {
            count[static_cast<std::size_t>(i)] = 1 + static_cast<int>(rng() % 4);
            stride[static_cast<std::size_t>(i) - 1] = block + static_cast<int>(rng() % 5);
            block = stride[static_cast<std::size_t>(i) - 1] * count[static_cast<std::size_t>(i)];
        }
        const a::Shape s = a::make_shape(stride.data(), stride.data(), count.data(), levels);
        std::vector<std::byte> area(a::extent(s.count, s.src_stride));
        for (auto &b : area)
            b = static_cast<std::byte>(rng());
        std::vector<std::byte> packed(s.bytes()), back(area.size(), std::byte{0});
        a::pack(area.data(), s.src_stride, s.count, packed.data());
        a::unpack(packed.data(), s.count, back.data(), s.src_stride);
        // Every byte of every chunk went there and back; the gaps stay 0.
        std::vector<bool> covered(area.size());
        std::uint64_t at = 0;
        nicoff::for_each_chunk(s.count, {0, s.src_stride}, {0, a::packed_strides(s.count)},
                               [&](std::uint64_t off, std::uint64_t poff, std::uint64_t n) {
                                   assert_int_equal(poff, at);
                                   assert_memory_equal(packed.data() + poff, area.data() + off, n);
                                   for (std::uint64_t i = 0; i < n; i++)
                                       covered[off + i] = true;
                                   at += n;
                               });
        assert_int_equal(at, packed.size());
        for (std::size_t i = 0; i < area.size(); i++)
            assert_true(back[i] == (covered[i] ? area[i] : std::byte{0}));
    }
}

void test_method(void **) {
    assert_true(a::strided_method(nullptr) == nicoff::StridedMethod::automatic);
    for (const char *name : {"nic", "naive", "hbna", "auto"}) {
        const nicoff::StridedMethod m = a::strided_method(name);
        assert_string_equal(std::string(nicoff::method_name(m)).c_str(), name);
        assert_true(a::needs_targets(m) ==
                    (std::string_view(name) == "hbna" || std::string_view(name) == "auto"));
    }
    assert_int_equal(error_of([] { a::strided_method("fast"); }), EINVAL);
    assert_int_equal(error_of([] { a::strided_method(""); }), EINVAL);
    assert_int_equal(error_of([] { a::strided_method("automatic"); }), EINVAL);
}

void test_bounce_space(void **) {
    constexpr std::uint64_t size = 64 * 1024;
    a::BounceSpace sp(size + 10); // the tail short of a whole unit is not used
    assert_int_equal(sp.size(), size);
    assert_false(sp.take(0).has_value());
    assert_false(sp.take(size + 1).has_value());
    // Random takes and gives in any order: pieces never overlap, the free
    // count follows, and with everything back the space is whole again.
    std::mt19937 rng(7);
    struct Held {
        std::uint64_t off, len;
    };
    std::vector<Held> held;
    std::vector<int> owner(size / a::BounceSpace::align, -1);
    for (int round = 0; round < 5000; round++) {
        if (held.empty() || rng() % 3) {
            const std::uint64_t len = 1 + rng() % 5000;
            const auto off = sp.take(len);
            if (!off) {
                assert_true(sp.free_bytes() < size);
                continue;
            }
            assert_int_equal(*off % a::BounceSpace::align, 0);
            assert_true(*off + len <= size);
            for (std::uint64_t u = *off / a::BounceSpace::align;
                 u * a::BounceSpace::align < *off + len; u++) {
                assert_int_equal(owner[u], -1);
                owner[u] = round;
            }
            held.push_back({*off, len});
        } else {
            const std::size_t i = rng() % held.size();
            const Held h = held[i];
            held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
            for (std::uint64_t u = h.off / a::BounceSpace::align;
                 u * a::BounceSpace::align < h.off + h.len; u++)
                owner[u] = -1;
            sp.give(h.off, h.len);
        }
        std::uint64_t busy = 0;
        for (const int o : owner)
            busy += o >= 0 ? a::BounceSpace::align : 0;
        assert_int_equal(sp.free_bytes(), size - busy);
    }
    for (const Held &h : held)
        sp.give(h.off, h.len);
    assert_int_equal(sp.free_bytes(), size);
    const auto whole = sp.take(size);
    assert_true(whole && *whole == 0);
    // A lease gives its piece back when it goes, once, also after a move.
    sp.give(0, size);
    {
        a::BounceLease l(sp, *sp.take(100), 100);
        a::BounceLease m(std::move(l));
        assert_false(static_cast<bool>(l));
        assert_true(static_cast<bool>(m));
        assert_int_equal(sp.free_bytes(), size - a::BounceSpace::align * 2);
    }
    assert_int_equal(sp.free_bytes(), size);
}

void test_bounce_env(void **) {
    assert_int_equal(a::bounce_bytes(nullptr), 1 << 20);
    assert_int_equal(a::bounce_bytes("0"), 0);
    assert_int_equal(a::bounce_bytes("4096"), 4096);
    assert_int_equal(a::bounce_bytes("1073741824"), 1 << 30);
    for (const char *bad : {"", "-1", "1k", " 5", "1073741825", "99999999999999999999999"})
        assert_int_equal(error_of([bad] { a::bounce_bytes(bad); }), EINVAL);
}

void test_handles(void **) {
    // A fresh handle gets the target; a second target makes it cover all.
    assert_int_equal(a::handle_target(-1, 0, 3), 3);
    assert_int_equal(a::handle_target(3, 5, 3), 3);
    assert_int_equal(a::handle_target(3, 5, 4), a::any_target);
    assert_int_equal(a::handle_target(a::any_target, 6, 3), a::any_target);
    // Ids: requests up to the handle's, to its target only.
    assert_true(a::covers(3, 10, 3, 10));
    assert_true(a::covers(3, 10, 3, 1));
    assert_false(a::covers(3, 10, 3, 11));
    assert_false(a::covers(3, 10, 4, 9));
    assert_true(a::covers(a::any_target, 10, 4, 9));
    assert_false(a::covers(a::any_target, 10, 4, 12));
    // Across the 31-bit wrap: request 2^31 + 2 keeps 2, after 2^31 - 1.
    const std::uint64_t wrap = std::uint64_t{1} << 31;
    assert_int_equal(a::handle_id(wrap + 2), 2);
    assert_int_equal(a::handle_id(wrap), 0);
    assert_true(a::covers(1, 2, 1, wrap - 1));
    assert_false(a::covers(1, static_cast<std::uint32_t>(a::handle_id(wrap - 1)), 1, wrap + 2));
    assert_true(a::covers(1, 2, 1, wrap + 2));
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_directory),  cmocka_unit_test(test_shape_checks),
        cmocka_unit_test(test_pack),       cmocka_unit_test(test_method),
        cmocka_unit_test(test_handles),    cmocka_unit_test(test_bounce_space),
        cmocka_unit_test(test_bounce_env),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
