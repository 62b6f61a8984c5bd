// nicoff::McsLock and TasLock over a fake RemoteMemory: threads stand for
// nodes, "remote" words are this process's memory, atomics are CPU atomics
// and puts land one byte at a time with pauses in between (as a card's
// memcpy may), so the lock must cope with torn words.  No device is needed.
// Also: the command builders of remote atomics and Port's argument checks.
#include <nicoff/nicoff.hpp>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#include <tuple>
#include <vector>

// Last: cmocka's macros (fail, ...) clash with the standard headers.
#include "cmocka.hpp"

using nicoff::McsLock;
using nicoff::RemoteWord;
using nicoff::TasLock;

namespace {

// Regions by (card, port, rkey); each thread's view of "the fabric".
struct Fabric {
    std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::byte *> regions;
    std::atomic<std::uint64_t> atomics{0}, puts{0};

    std::byte *at(const RemoteWord &w) { return regions.at({w.card, w.port, w.rkey}) + w.offset; }
};

class FakeMemory final : public nicoff::RemoteMemory {
public:
    explicit FakeMemory(Fabric &f) : f_(f) {}

    std::uint64_t atomic(std::uint8_t opcode, const RemoteWord &w, std::uint64_t operand,
                         std::uint64_t compare) override {
        f_.atomics++;
        std::this_thread::yield(); // the round trip
        std::atomic_ref<std::uint64_t> word(*reinterpret_cast<std::uint64_t *>(f_.at(w)));
        switch (opcode) {
        case NICOFF_OP_FETCH_ADD:
            return word.fetch_add(operand);
        case NICOFF_OP_FETCH_WRITE:
            return word.exchange(operand);
        default:
            word.compare_exchange_strong(compare, operand);
            return compare;
        }
    }

    // Byte by byte, low byte last, yielding in between: torn words are seen.
    void put64(const RemoteWord &dst, std::uint64_t value) override {
        f_.puts++;
        auto *p = reinterpret_cast<volatile std::uint8_t *>(f_.at(dst));
        for (int i = 7; i >= 0; i--) {
            std::atomic_ref<std::uint8_t>(*const_cast<std::uint8_t *>(p + i))
                .store(static_cast<std::uint8_t>(value >> (8 * i)));
            if (i == 4)
                std::this_thread::yield();
        }
    }

    void flush() override {}

private:
    Fabric &f_;
};

template <class F>
int error_of(F &&f) {
    try {
        f();
    } catch (const std::system_error &e) {
        return e.code().value();
    }
    return 0;
}

constexpr unsigned threads = 6;
constexpr unsigned rounds = 3000;

// Mutual exclusion: a plain counter and a holder flag, checked inside.
struct Critical {
    std::uint64_t counter = 0; // incremented without atomics: lost updates if two hold it
    std::atomic<int> holders{0};
    std::atomic<bool> violated{false};

    void section() {
        if (holders.fetch_add(1) != 0)
            violated = true;
        const std::uint64_t v = counter;
        for (int i = 0; i < 20; i++)
            asm volatile("" ::: "memory");
        counter = v + 1;
        holders.fetch_sub(1);
    }
};

void test_mcs_threads(void **) {
    Fabric fab;
    alignas(64) static std::byte home[64];
    alignas(64) static std::byte nodes[threads][McsLock::node_bytes];
    std::memset(home, 0, sizeof(home));
    fab.regions[{0, 0, 1}] = home;
    std::vector<RemoteWord> q;
    for (unsigned r = 0; r < threads; r++) {
        fab.regions[{r + 1, 0, 7}] = nodes[r];
        q.push_back(RemoteWord{r + 1, 0, 7, 8, 0});
    }
    const RemoteWord tail{0, 0, 1, 8, 0};
    Critical cs;
    std::vector<std::thread> ts;
    for (unsigned r = 0; r < threads; r++)
        ts.emplace_back([&, r] {
            FakeMemory mem(fab);
            McsLock lock(mem, r, q, tail, nodes[r]);
            for (unsigned i = 0; i < rounds; i++) {
                if (i % 2) {
                    auto g = lock.guard();
                    cs.section();
                } else {
                    lock.lock();
                    cs.section();
                    lock.unlock();
                }
            }
        });
    for (auto &t : ts)
        t.join();
    assert_false(cs.violated.load());
    assert_int_equal(cs.counter, threads * rounds);
    assert_int_equal(*reinterpret_cast<std::uint64_t *>(home), 0); // free again
}

void test_tas_threads(void **) {
    Fabric fab;
    alignas(64) static std::byte home[64];
    std::memset(home, 0, sizeof(home));
    fab.regions[{2, 3, 4}] = home;
    Critical cs;
    std::vector<std::thread> ts;
    for (unsigned r = 0; r < threads; r++)
        ts.emplace_back([&, r] {
            FakeMemory mem(fab);
            TasLock lock(mem, r, RemoteWord{2, 3, 4, 8, 8});
            for (unsigned i = 0; i < rounds / 3; i++) {
                auto g = lock.guard();
                cs.section();
            }
        });
    for (auto &t : ts)
        t.join();
    assert_false(cs.violated.load());
    assert_int_equal(cs.counter, threads * (rounds / 3));
}

void test_uncontended_costs(void **) {
    Fabric fab;
    alignas(64) static std::byte home[64];
    alignas(64) static std::byte node[McsLock::node_bytes];
    std::memset(home, 0, sizeof(home));
    fab.regions[{0, 0, 1}] = home;
    fab.regions[{1, 0, 2}] = node;
    FakeMemory mem(fab);
    McsLock lock(mem, 0, {RemoteWord{1, 0, 2, 8, 0}}, RemoteWord{0, 0, 1, 8, 0}, node);
    // Alone: a swap to take it, a CAS to give it back, no put.
    lock.lock();
    lock.unlock();
    assert_int_equal(fab.atomics.load(), 2);
    assert_int_equal(fab.puts.load(), 0);
    assert_true(lock.try_lock());
    lock.unlock();

    TasLock tas(mem, 5, RemoteWord{0, 0, 1, 8, 8});
    assert_true(tas.try_lock());
    assert_int_equal(*reinterpret_cast<std::uint64_t *>(home + 8), 6);
    TasLock other(mem, 6, RemoteWord{0, 0, 1, 8, 8});
    assert_false(other.try_lock());
    assert_int_equal(error_of([&] { other.unlock(); }), EPERM);
    tas.unlock();
    assert_int_equal(*reinterpret_cast<std::uint64_t *>(home + 8), 0);
}

void test_bad_arguments(void **) {
    Fabric fab;
    FakeMemory mem(fab);
    alignas(64) static std::byte node[McsLock::node_bytes];
    const RemoteWord w{0, 0, 1, 8, 0};
    assert_int_equal(error_of([&] { McsLock(mem, 1, {w}, w, node); }), EINVAL);
    assert_int_equal(error_of([&] { McsLock(mem, 0, {w}, w, std::span<std::byte>(node, 32)); }),
                     EINVAL);
    assert_int_equal(error_of([&] {
                         McsLock(mem, 0, {w}, RemoteWord{0, 0, 1, 4, 0}, node);
                     }),
                     EINVAL);
    assert_int_equal(error_of([&] { McsLock(mem, 0, {w}, w, std::span(node + 1, 63)); }), EINVAL);
}

void test_builders(void **) {
    const RemoteWord w{3, 17, 0xabcdef01u, 4, 40};
    nicoff_cmd c = nicoff::make_fetch_add(w, 5, 9);
    assert_int_equal(c.opcode, NICOFF_OP_FETCH_ADD);
    assert_int_equal(c.tag, 9);
    assert_int_equal(c.atomic.dst_card, 3);
    assert_int_equal(c.atomic.dst_port, 17);
    assert_int_equal(c.atomic.rkey, 0xabcdef01u);
    assert_int_equal(c.atomic.width, 4);
    assert_int_equal(c.atomic.remote_off, 40);
    assert_int_equal(c.atomic.operand, 5);
    assert_int_equal(c.atomic.compare, 0);
    assert_int_equal(c.atomic.reserved, 0);
    c = nicoff::make_swap(w.at(8), 6, 10);
    assert_int_equal(c.opcode, NICOFF_OP_FETCH_WRITE);
    assert_int_equal(c.atomic.remote_off, 48);
    assert_int_equal(c.atomic.operand, 6);
    c = nicoff::make_compare_swap(w, 7, 8, 11);
    assert_int_equal(c.opcode, NICOFF_OP_COMPARE_SWAP);
    assert_int_equal(c.atomic.compare, 7);
    assert_int_equal(c.atomic.operand, 8);
    assert_int_equal(c.flags, 0);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builders),          cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_uncontended_costs), cmocka_unit_test(test_mcs_threads),
        cmocka_unit_test(test_tas_threads),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
