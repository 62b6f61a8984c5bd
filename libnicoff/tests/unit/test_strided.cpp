// nicoff::for_each_chunk, without a card: on seeded random shapes of 0 to 8
// levels, copying the chunks it names gives what the reference walk shared
// with the firmware's test and the kselftest gives; zero counts name none;
// bad shapes are refused.  nicoff::segments_of likewise: ARMCI's giov lists
// flattened, copied as the card copies a list, give ARMCI's PutV and GetV.
// The methods' words, seed 004's models' choice and their cache text,
// shape_size, and for_each_piece (HBNA's packing in buffer-sized pieces).
#include "test_errors.hpp"

#include <nicoff/strided.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../../../selftests/nicoff_strided_ref.h"

// Last: cmocka's macros (fail, ...) clash with the standard headers.
#include "cmocka.hpp"

namespace {

using nicoff::StridedSide;
using nicoff::test::error_of;

constexpr std::size_t big = 1 << 20;

// A seeded random shape of 0 to 8 levels at random offsets of a random
// source, and the destination the reference copy makes of zeros.
struct RandomCase {
    std::vector<std::uint8_t> src = std::vector<std::uint8_t>(big);
    std::vector<std::uint8_t> want = std::vector<std::uint8_t>(big);
    std::vector<std::uint64_t> count, ls, rs;
    std::uint64_t soff = 0, doff = 0;

    explicit RandomCase(__u64 *seed) {
        nicoff_strided_desc d;
        const __u32 levels = sref_random_shape(&d, 0x20000, 0x60000, seed);
        soff = sref_rand(seed) % (big - 0x60000);
        doff = sref_rand(seed) % (big - 0x60000);
        for (std::size_t i = 0; i < big; i++)
            src[i] = static_cast<std::uint8_t>(sref_rand(seed));
        sref_copy(&d, levels, src.data(), soff, d.local_stride, want.data(), doff, d.remote_stride);
        count.assign(d.count, d.count + levels + 1);
        ls.assign(d.local_stride, d.local_stride + levels);
        rs.assign(d.remote_stride, d.remote_stride + levels);
    }
};

void test_random_shapes(void **) {
    __u64 seed = 99;
    for (int round = 0; round < 300; round++) {
        const RandomCase c(&seed);
        std::vector<std::uint8_t> got(big);
        std::uint64_t bytes = 0;
        nicoff::for_each_chunk(c.count, StridedSide{c.soff, c.ls}, StridedSide{c.doff, c.rs},
                               [&](std::uint64_t l, std::uint64_t r, std::uint64_t n) {
                                   std::memmove(got.data() + r, c.src.data() + l, n);
                                   bytes += n;
                               });
        assert_int_equal(bytes, nicoff::shape_size(c.count).bytes);
        assert_memory_equal(got.data(), c.want.data(), big);
    }
}

void test_edges(void **) {
    const std::uint64_t stride[8] = {100, 1000, 0, 0, 0, 0, 0, 0};
    int calls = 0;
    const auto count_calls = [&](std::uint64_t, std::uint64_t, std::uint64_t) {
        calls++;
    };
    // A zero count anywhere: no chunk.
    const std::uint64_t zero[] = {8, 3, 0};
    nicoff::for_each_chunk(zero, StridedSide{0, stride}, StridedSide{0, stride}, count_calls);
    assert_int_equal(calls, 0);
    // Level 0: one chunk, at the offsets.
    const std::uint64_t one[] = {5};
    std::uint64_t at_l = 0, at_r = 0;
    nicoff::for_each_chunk(one, StridedSide{7, {}}, StridedSide{9, {}},
                           [&](std::uint64_t l, std::uint64_t r, std::uint64_t n) {
                               at_l = l;
                               at_r = r;
                               assert_int_equal(n, 5);
                               calls++;
                           });
    assert_int_equal(calls, 1);
    assert_int_equal(at_l, 7);
    assert_int_equal(at_r, 9);
    // Nine levels, or a stride array shorter than the levels: EINVAL.
    const std::uint64_t nine[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    const std::uint64_t strides9[9] = {};
    assert_int_equal(error_of([&] {
                         nicoff::for_each_chunk(nine, StridedSide{0, strides9},
                                                StridedSide{0, strides9}, count_calls);
                     }),
                     EINVAL);
    const std::uint64_t two[] = {4, 2, 2};
    assert_int_equal(error_of([&] {
                         nicoff::for_each_chunk(two, StridedSide{0, std::span(stride, 1)},
                                                StridedSide{0, stride}, count_calls);
                     }),
                     EINVAL);
    assert_int_equal(
        error_of([&] { nicoff::for_each_chunk({}, StridedSide{}, StridedSide{}, count_calls); }),
        EINVAL);
}

// ARMCI's PutV or GetV of list, done one pair at a time as ARMCI defines it.
void giov_reference(std::span<const nicoff::Giov> list, const std::uint8_t *src,
                    std::uint8_t *dst) {
    for (const nicoff::Giov &g : list)
        for (std::size_t i = 0; i < g.src.size(); i++)
            std::memmove(dst + g.dst[i], src + g.src[i], g.bytes);
}

void test_giov(void **) {
    constexpr std::size_t span = 1 << 16;
    std::vector<std::uint8_t> src(span), want(span), got(span);
    __u64 seed = 7;
    for (int round = 0; round < 200; round++) {
        const bool put = round % 2;
        // Up to 5 descriptors of up to 12 pairs, lengths 0 to 300, anywhere (overlaps too).
        const std::size_t ndesc = sref_rand(&seed) % 6;
        std::vector<std::vector<std::uint64_t>> offs(2 * ndesc);
        std::vector<nicoff::Giov> list;
        for (std::size_t d = 0; d < ndesc; d++) {
            const std::uint64_t bytes = sref_rand(&seed) % 301;
            const std::size_t n = sref_rand(&seed) % 13;
            for (std::size_t i = 0; i < n; i++) {
                offs[2 * d].push_back(sref_rand(&seed) % (span - bytes));
                offs[2 * d + 1].push_back(sref_rand(&seed) % (span - bytes));
            }
            list.push_back({offs[2 * d], offs[2 * d + 1], bytes});
        }
        for (std::size_t i = 0; i < span; i++)
            src[i] = static_cast<std::uint8_t>(sref_rand(&seed));
        std::fill(want.begin(), want.end(), 0);
        std::fill(got.begin(), got.end(), 0);
        giov_reference(list, src.data(), want.data());
        const std::vector<nicoff::Segment> segs = nicoff::segments_of(list, put);
        std::vector<nicoff_vector_seg> wire;
        for (const nicoff::Segment &g : segs)
            wire.push_back({g.local_offset, g.remote_offset, g.bytes});
        vref_copy(wire.data(), static_cast<__u32>(wire.size()), put, src.data(), 0, got.data(), 0);
        assert_memory_equal(got.data(), want.data(), span);
    }
    // A descriptor whose arrays differ in length.
    const std::uint64_t a[2] = {0, 8}, b[1] = {0};
    const nicoff::Giov bad[] = {{a, b, 8}};
    assert_int_equal(error_of([&] { nicoff::segments_of(bad, true); }), EINVAL);
}

void test_method_names(void **) {
    using nicoff::StridedMethod;
    for (const StridedMethod m :
         {StridedMethod::nic, StridedMethod::hbna, StridedMethod::naive, StridedMethod::automatic})
        assert_true(nicoff::parse_strided_method(nicoff::method_name(m)) == m);
    assert_true(nicoff::method_name(StridedMethod::automatic) == "auto");
    assert_false(nicoff::parse_strided_method("automatic").has_value());
    assert_false(nicoff::parse_strided_method("").has_value());
    assert_false(nicoff::parse_strided_method("NIC").has_value());
}

// Seed 004's trade: many small chunks favour packing (k * ts_nic above
// 2 * tm * N + ts_hbna), few large ones the card.
void test_model_choice(void **) {
    using nicoff::StridedMethod;
    nicoff::StridedModel m;
    m.ts_nic = 2e-6;  // per chunk the card walks
    m.ts_put = 20e-6; // per contiguous command
    m.tn = 1e-9;      // 1 GB/s
    m.ts_hbna = 100e-6;
    m.tm = 0.1e-9; // 10 GB/s copies
    // 4096 chunks of 8 B: nic 8.2 ms + 32 us, hbna 100 us + 32 us + 6.6 us.
    assert_true(m.choose(4096, 32768, true) == StridedMethod::hbna);
    assert_true(m.choose(4096, 32768, false) == StridedMethod::nic);
    // 64 chunks of 16 KiB: nic 128 us + 1 ms, hbna 100 us + 1 ms + 210 us.
    assert_true(m.choose(64, 64 * 16384, true) == StridedMethod::nic);
    // The crossover: 2 * tm * N + ts_hbna = k * ts_nic, at N = 8 * k: k = 50.4.
    assert_true(m.choose(50, 400, true) == StridedMethod::nic);
    assert_true(m.choose(51, 408, true) == StridedMethod::hbna);
    assert_true(m.predict(StridedMethod::naive, 10, 80) > m.predict(StridedMethod::nic, 10, 80));
    // A card whose commands cost less than its walk: naive wins.
    m.ts_put = 1e-6;
    assert_true(m.choose(10, 80, false) == StridedMethod::naive);
}

void test_model_text(void **) {
    nicoff::StridedModel m{1.5e-6, 2.25e-5, 9.5e-10, 1.25e-4, 3e-11};
    const auto back = nicoff::StridedModel::from_text(m.to_text());
    assert_true(back.has_value());
    assert_true(back->ts_nic == m.ts_nic && back->ts_put == m.ts_put && back->tn == m.tn &&
                back->ts_hbna == m.ts_hbna && back->tm == m.tm);
    // A parameter missing, unknown, negative or not a number: refused.
    std::string text = m.to_text();
    assert_false(nicoff::StridedModel::from_text(text.substr(0, text.rfind("tm "))).has_value());
    assert_false(nicoff::StridedModel::from_text(text + "tx 1\n").has_value());
    assert_false(nicoff::StridedModel::from_text("ts_nic -1\n" + text).has_value());
    assert_false(nicoff::StridedModel::from_text("ts_nic x\n" + text).has_value());
    // The cache directory: XDG_CACHE_HOME, else HOME's .cache.
    setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
    assert_string_equal(nicoff::strided_cache_path(3).c_str(), "/tmp/xdg/nicoff/strided-card3");
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/home/u", 1);
    assert_string_equal(nicoff::strided_cache_path(0).c_str(),
                        "/home/u/.cache/nicoff/strided-card0");
}

void test_shape_size(void **) {
    const std::uint64_t a[] = {8, 3, 5};
    assert_int_equal(nicoff::shape_size(a).chunks, 15);
    assert_int_equal(nicoff::shape_size(a).bytes, 120);
    const std::uint64_t z[] = {8, 0, 5};
    assert_int_equal(nicoff::shape_size(z).chunks, 0);
    assert_int_equal(nicoff::shape_size(z).bytes, 0);
    const std::uint64_t big[] = {1ull << 40, 1ull << 30};
    assert_int_equal(error_of([&] { nicoff::shape_size(big); }), EOVERFLOW);
    const std::uint64_t nine[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    assert_int_equal(error_of([&] { nicoff::shape_size(nine); }), EINVAL);
}

// Packing a random shape in random pieces and unpacking them gives the
// reference copy: the pieces cover the stream exactly once, in order.
void test_pieces(void **) {
    std::vector<std::uint8_t> packed;
    __u64 seed = 1234;
    for (int round = 0; round < 200; round++) {
        const RandomCase c(&seed);
        std::vector<std::uint8_t> got(big);
        const auto &[src, want, count, ls, rs, soff, doff] = c;
        const std::uint64_t total = nicoff::shape_size(count).bytes;
        const std::uint64_t piece = 1 + sref_rand(&seed) % 5000;
        for (std::uint64_t from = 0; from < total; from += piece) {
            const std::uint64_t len = std::min(piece, total - from);
            packed.clear();
            nicoff::for_each_piece(
                count, StridedSide{soff, ls}, from, len, [&](std::uint64_t off, std::uint64_t n) {
                    packed.insert(packed.end(), src.begin() + off, src.begin() + off + n);
                });
            assert_int_equal(packed.size(), len);
            std::uint64_t at = 0;
            nicoff::for_each_piece(count, StridedSide{doff, rs}, from, len,
                                   [&](std::uint64_t off, std::uint64_t n) {
                                       std::memmove(got.data() + off, packed.data() + at, n);
                                       at += n;
                                   });
        }
        assert_memory_equal(got.data(), want.data(), big);
    }
    const std::uint64_t c[] = {4, 2};
    const std::uint64_t st[] = {10};
    assert_int_equal(error_of([&] {
                         nicoff::for_each_piece(c, StridedSide{0, st}, 6, 3,
                                                [](std::uint64_t, std::uint64_t) {});
                     }),
                     ERANGE);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_shapes), cmocka_unit_test(test_edges),
        cmocka_unit_test(test_giov),          cmocka_unit_test(test_method_names),
        cmocka_unit_test(test_model_choice),  cmocka_unit_test(test_model_text),
        cmocka_unit_test(test_shape_size),    cmocka_unit_test(test_pieces),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
