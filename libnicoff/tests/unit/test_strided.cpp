// nicoff::for_each_chunk, without a card: on seeded random shapes of 0 to 8
// levels, copying the chunks it names gives what the reference walk shared
// with the firmware's test and the kselftest gives; zero counts name none;
// bad shapes are refused.  nicoff::segments_of likewise: ARMCI's giov lists
// flattened, copied as the card copies a list, give ARMCI's PutV and GetV.
#include "test_errors.hpp"

#include <nicoff/strided.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../../../selftests/nicoff_strided_ref.h"

// Last: cmocka's macros (fail, ...) clash with the standard headers.
#include "cmocka.hpp"

namespace {

using nicoff::StridedSide;
using nicoff::test::error_of;

constexpr std::size_t big = 1 << 20;

void test_random_shapes(void **) {
    std::vector<std::uint8_t> src(big), want(big), got(big);
    __u64 seed = 99;
    for (int round = 0; round < 300; round++) {
        nicoff_strided_desc d;
        const __u32 levels = sref_random_shape(&d, 0x20000, 0x60000, &seed);
        const std::uint64_t soff = sref_rand(&seed) % (big - 0x60000);
        const std::uint64_t doff = sref_rand(&seed) % (big - 0x60000);
        for (std::size_t i = 0; i < big; i++)
            src[i] = static_cast<std::uint8_t>(sref_rand(&seed));
        std::memset(want.data(), 0, big);
        std::memset(got.data(), 0, big);
        sref_copy(&d, levels, src.data(), soff, d.local_stride, want.data(), doff, d.remote_stride);
        const std::vector<std::uint64_t> count(d.count, d.count + levels + 1);
        const std::vector<std::uint64_t> ls(d.local_stride, d.local_stride + levels);
        const std::vector<std::uint64_t> rs(d.remote_stride, d.remote_stride + levels);
        std::uint64_t bytes = 0;
        nicoff::for_each_chunk(count, StridedSide{soff, ls}, StridedSide{doff, rs},
                               [&](std::uint64_t l, std::uint64_t r, std::uint64_t n) {
                                   std::memmove(got.data() + r, src.data() + l, n);
                                   bytes += n;
                               });
        assert_int_equal(bytes, sref_len(&d, levels));
        assert_memory_equal(got.data(), want.data(), big);
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

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_shapes),
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_giov),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
