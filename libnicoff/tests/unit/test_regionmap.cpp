// nicoff::RegionMap: boundaries, regions sharing granules, overlaps, and
// lock-free readers racing a writer that adds and removes regions.  No
// device is needed: entries are inserted directly with made-up addresses.
#include <nicoff/nicoff.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <random>
#include <system_error>
#include <thread>
#include <vector>

// Last: cmocka's macros (fail, ...) clash with the standard headers.
#include "cmocka.hpp"

using nicoff::RegionMap;
using namespace std::chrono_literals;

namespace {

RegionMap::Entry entry(std::uintptr_t addr, std::size_t len, std::uint32_t handle) {
    RegionMap::Entry e;
    e.addr = addr;
    e.length = len;
    e.handle = handle;
    e.rkey = handle ^ 0xabcd0000u;
    e.access = NICOFF_ACCESS_LOCAL_WRITE;
    return e;
}

// Runs f and returns the errno of the std::system_error it throws (0: none).
template <class F>
int error_of(F &&f) {
    try {
        f();
    } catch (const std::system_error &e) {
        if (e.code().category() != std::generic_category())
            return -1;
        return e.code().value();
    }
    return 0;
}

std::uint32_t handle_at(const RegionMap &m, std::uintptr_t a, std::size_t len = 1) {
    const auto e = m.lookup(a, len);
    return e ? e->handle : 0;
}

void test_granule_shift(void **) {
    assert_int_equal(error_of([] { RegionMap m(11); }), EINVAL);
    assert_int_equal(error_of([] { RegionMap m(49); }), EINVAL);
    RegionMap m(12);
    assert_int_equal(m.granule_size(), 4096);
    RegionMap d;
    assert_int_equal(d.granule_size(), std::size_t{1} << RegionMap::default_granule_shift);
}

void test_boundaries(void **) {
    RegionMap m; // 64 KiB granules
    m.insert(entry(0x100000, 0x3000, 1));
    assert_int_equal(m.size(), 1);
    assert_int_equal(handle_at(m, 0x100000), 1);
    assert_int_equal(handle_at(m, 0x102fff), 1);
    assert_int_equal(handle_at(m, 0x0fffff), 0);
    assert_int_equal(handle_at(m, 0x103000), 0);
    assert_int_equal(handle_at(m, 0x102ff0, 0x10), 1);
    assert_int_equal(handle_at(m, 0x102ff0, 0x11), 0); // runs past the end
    assert_int_equal(handle_at(m, 0x100000, 0), 1);    // len 0 counts as 1
    assert_int_equal(handle_at(m, 0x100000, 0x3000), 1);
    assert_int_equal(handle_at(m, 0x0fffff, 0x3001), 0); // starts before
    assert_int_equal(handle_at(m, UINTPTR_MAX, 2), 0);   // wrapping query

    const auto e = m.lookup(reinterpret_cast<const void *>(0x101234));
    assert_true(e.has_value());
    assert_int_equal(e->addr, 0x100000);
    assert_int_equal(e->length, 0x3000);
    assert_int_equal(e->rkey, 1 ^ 0xabcd0000u);
    assert_int_equal(e->access, NICOFF_ACCESS_LOCAL_WRITE);

    // A region that ends at the very top of the address space.
    m.insert(entry(UINTPTR_MAX - 0xfff, 0x1000, 2));
    assert_int_equal(handle_at(m, UINTPTR_MAX), 2);
    assert_int_equal(handle_at(m, UINTPTR_MAX - 0xfff), 2);
    assert_int_equal(handle_at(m, UINTPTR_MAX - 0x1000), 0);
}

void test_shared_granules(void **) {
    RegionMap m(16);
    // A and B share granule 1; C spans granules 1..3; D shares granule 3.
    m.insert(entry(0x10000, 0x100, 1));
    m.insert(entry(0x10100, 0x100, 2));
    m.insert(entry(0x1ff00, 0x10200, 3)); // [0x1ff00, 0x30100)
    m.insert(entry(0x30100, 0x100, 4));
    assert_int_equal(handle_at(m, 0x10000), 1);
    assert_int_equal(handle_at(m, 0x100ff), 1);
    assert_int_equal(handle_at(m, 0x10100), 2);
    assert_int_equal(handle_at(m, 0x101ff), 2);
    assert_int_equal(handle_at(m, 0x10200), 0); // hole in granule 1
    assert_int_equal(handle_at(m, 0x1feff), 0);
    assert_int_equal(handle_at(m, 0x1ff00), 3);
    assert_int_equal(handle_at(m, 0x20000), 3);
    assert_int_equal(handle_at(m, 0x2ffff), 3);
    assert_int_equal(handle_at(m, 0x300ff), 3);
    assert_int_equal(handle_at(m, 0x30100), 4);
    assert_int_equal(handle_at(m, 0x30200), 0);
    assert_int_equal(handle_at(m, 0x100f0, 0x20), 0); // straddles A and B

    // 256 regions of 256 bytes packed into one granule.
    for (std::uint32_t i = 0; i < 256; i++)
        m.insert(entry(0x50000 + i * 0x100, 0x100, 100 + i));
    for (std::uint32_t i = 0; i < 256; i++) {
        assert_int_equal(handle_at(m, 0x50000 + i * 0x100), 100 + i);
        assert_int_equal(handle_at(m, 0x500ff + i * 0x100), 100 + i);
    }
    assert_int_equal(m.size(), 4 + 256);
}

void test_overlaps_and_bad_ranges(void **) {
    RegionMap m;
    m.insert(entry(0x10000, 0x1000, 1));
    assert_int_equal(error_of([&] { m.insert(entry(0x10000, 0x1000, 2)); }), EEXIST);
    assert_int_equal(error_of([&] { m.insert(entry(0x10fff, 0x10, 2)); }), EEXIST);
    assert_int_equal(error_of([&] { m.insert(entry(0xf000, 0x1001, 2)); }), EEXIST);
    assert_int_equal(error_of([&] { m.insert(entry(0x0, 0x100000, 2)); }), EEXIST);
    assert_int_equal(error_of([&] { m.insert(entry(0x10800, 0x10, 2)); }), EEXIST);
    assert_int_equal(error_of([&] { m.insert(entry(0x20000, 0, 2)); }), EINVAL);
    assert_int_equal(error_of([&] { m.insert(entry(UINTPTR_MAX - 0xf, 0x11, 2)); }), EINVAL);
    // One node per granule: a region needing more than 2^24 is refused.
    assert_int_equal(error_of([&] { m.insert(entry(0x100000000ull, std::size_t{1} << 41, 2)); }),
                     E2BIG);
    // Adjacent on both sides is fine.
    m.insert(entry(0xf000, 0x1000, 3));
    m.insert(entry(0x11000, 0x1000, 4));
    assert_int_equal(m.size(), 3);
    // Nothing of the refused inserts is visible.
    assert_int_equal(handle_at(m, 0x20000), 0);
    assert_int_equal(handle_at(m, 0x10800), 1);
    // An empty MemoryRegion cannot be inserted.
    nicoff::MemoryRegion empty;
    assert_int_equal(error_of([&] { m.insert(empty); }), EINVAL);
}

void test_erase(void **) {
    RegionMap m(12);
    int cookie = 42;
    RegionMap::Entry e = entry(0x200000, 0x5000, 7);
    e.user = &cookie;
    m.insert(e);
    const auto hit = m.lookup(std::uintptr_t{0x203000});
    assert_true(hit.has_value());
    assert_ptr_equal(hit->user, &cookie);
    assert_false(m.erase(std::uintptr_t{0x201000})); // not the base
    assert_false(m.erase(std::uintptr_t{0x300000}));
    assert_true(m.erase(std::uintptr_t{0x200000}));
    assert_false(m.erase(std::uintptr_t{0x200000}));
    assert_int_equal(m.size(), 0);
    for (std::uintptr_t a = 0x200000; a < 0x205000; a += 0x800)
        assert_int_equal(handle_at(m, a), 0);
    // The range can be reused, with a different shape.
    m.insert(entry(0x1ff000, 0x3000, 8));
    assert_int_equal(handle_at(m, 0x200000), 8);
    assert_int_equal(handle_at(m, 0x202000), 0);
}

void test_large_region(void **) {
    RegionMap m; // 1 GiB in 64 KiB granules: 16384 nodes
    const std::uintptr_t base = 0x7f0000001000ull;
    const std::size_t len = std::size_t{1} << 30;
    m.insert(entry(base, len, 9));
    std::mt19937_64 rng(1);
    for (int i = 0; i < 100000; i++) {
        const std::uintptr_t a = base + rng() % len;
        assert_int_equal(handle_at(m, a), 9);
    }
    assert_int_equal(handle_at(m, base - 1), 0);
    assert_int_equal(handle_at(m, base + len), 0);
    assert_int_equal(handle_at(m, base, len), 9);
    assert_true(m.erase(base));
    assert_int_equal(handle_at(m, base + len / 2), 0);
}

// Readers (plain threads that never register with liburcu) look up random
// addresses while a writer keeps inserting and erasing half of the regions.
// A stable region must always be found; a churning one may or may not be,
// but whatever is found must be exactly the region that owns the address;
// addresses in the gaps must never be found.
void test_concurrent_readers(void **) {
    constexpr std::uint32_t slots = 128; // even: stable, odd: churning
    constexpr std::uintptr_t origin = 0x40000000;
    constexpr std::uintptr_t stride = 0x30000;
    auto base_of = [](std::uint32_t i) {
        return origin + i * stride + (i % 7) * 0x1100;
    };
    auto len_of = [](std::uint32_t i) {
        return std::size_t{0x18000} + (i % 5) * 0x100;
    };
    auto handle_of = [](std::uint32_t i, std::uint32_t gen) {
        return (gen << 8) | i;
    };

    RegionMap m(14); // 16 KiB granules: every region spans several
    for (std::uint32_t i = 0; i < slots; i += 2)
        m.insert(entry(base_of(i), len_of(i), handle_of(i, 0)));

    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> errors{0}, lookups{0}, churn_hits{0}, churn_misses{0};
    std::atomic<std::uint32_t> generation{1};

    auto reader = [&](unsigned seed) {
        std::mt19937 rng(seed);
        std::uint64_t n = 0;
        while (!stop.load(std::memory_order_relaxed)) {
            const std::uint32_t i = rng() % slots;
            const bool in_gap = (rng() & 7) == 0;
            if (in_gap) {
                // Just past the region, before the next one.
                const std::uintptr_t a = base_of(i) + len_of(i) + rng() % 0x100;
                if (m.lookup(a))
                    errors++;
            } else {
                const std::uintptr_t a = base_of(i) + rng() % len_of(i);
                const auto e = m.lookup(a);
                if (e) {
                    if (e->addr != base_of(i) || e->length != len_of(i) ||
                        (e->handle & 0xff) != i || e->rkey != (e->handle ^ 0xabcd0000u))
                        errors++;
                    if (i & 1)
                        churn_hits++;
                } else if (i & 1) {
                    churn_misses++;
                } else {
                    errors++; // a stable region went missing
                }
            }
            n++;
        }
        lookups += n;
    };

    std::vector<std::thread> readers;
    for (unsigned r = 0; r < 3; r++)
        readers.emplace_back(reader, r + 1);

    std::uint64_t writes = 0;
    std::vector<bool> present(slots, false);
    const auto until = std::chrono::steady_clock::now() + 1s;
    std::mt19937 rng(99);
    while (std::chrono::steady_clock::now() < until || writes < 2000) {
        const std::uint32_t i = (rng() % (slots / 2)) * 2 + 1;
        if (present[i]) {
            if (!m.erase(base_of(i)))
                errors++;
        } else {
            m.insert(entry(base_of(i), len_of(i), handle_of(i, generation++ & 0xffffff)));
        }
        present[i] = !present[i];
        writes++;
    }
    stop = true;
    for (auto &t : readers)
        t.join();

    print_message("%llu lookups, %llu writes, churning regions hit %llu / missed %llu\n",
                  static_cast<unsigned long long>(lookups.load()),
                  static_cast<unsigned long long>(writes),
                  static_cast<unsigned long long>(churn_hits.load()),
                  static_cast<unsigned long long>(churn_misses.load()));
    assert_int_equal(errors.load(), 0);
    assert_true(churn_hits.load() > 0);
    assert_true(churn_misses.load() > 0);
    std::size_t expect = slots / 2;
    for (std::uint32_t i = 1; i < slots; i += 2)
        expect += present[i];
    assert_int_equal(m.size(), expect);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_granule_shift),
        cmocka_unit_test(test_boundaries),
        cmocka_unit_test(test_shared_granules),
        cmocka_unit_test(test_overlaps_and_bad_ranges),
        cmocka_unit_test(test_erase),
        cmocka_unit_test(test_large_region),
        cmocka_unit_test(test_concurrent_readers),
    };
    return cmocka_run_group_tests_name("libnicoff RegionMap", tests, nullptr, nullptr);
}
