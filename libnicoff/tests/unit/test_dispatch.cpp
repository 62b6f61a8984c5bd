// The completion dispatcher (src/dispatch.hpp) without a card: a
// completion ring in plain memory, read through the same ring code as a
// Port's (src/ring.hpp), filled by the test or by a thread playing the
// card.  Two owners' completions interleaved on one ring, a completion of
// no owner, and the deadlines.
#include "dispatch.hpp"
#include "ring.hpp"
#include "test_errors.hpp"
#include "test_rings.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

// Last: cmocka's macros (fail, ...) clash with the standard headers.
#include "cmocka.hpp"

using namespace nicoff::detail;
using nicoff::test::error_of;
using nicoff::test::RingMem;
using namespace std::chrono_literals;

namespace {

// A completion ring the test (or its card thread) fills; wait() sleeps on
// a condition variable until the ring has something, as poll(2) on a
// port's file does.
class MemSource final : public CompletionSource {
public:
    MemSource() : ring_(64, 0) { cq_.attach(ring_.hdr(), ring_.slots(), ring_.entries()); }

    // What the card does: one completion into the ring, then the wake-up.
    void complete(std::uint64_t tag, std::uint8_t opcode = NICOFF_OP_NOP) {
        {
            std::lock_guard lock(mu_);
            const std::uint32_t p = load_relaxed(&ring_.hdr()->producer);
            nicoff_cqe &c = ring_.slot(p);
            c = nicoff_cqe{};
            c.tag = tag;
            c.opcode = opcode;
            store_release(&ring_.hdr()->producer, p + 1);
        }
        cv_.notify_all();
    }

    std::size_t poll(std::span<nicoff_cqe> out) noexcept override {
        return cq_.drain(out.data(), static_cast<std::uint32_t>(out.size()));
    }
    bool in_error() const noexcept override { return error_; }
    bool wait(std::chrono::milliseconds timeout) override {
        waits_++;
        std::unique_lock lock(mu_);
        auto ready = [this] {
            return load_acquire(&ring_.hdr()->producer) != load_relaxed(&ring_.hdr()->consumer);
        };
        if (timeout.count() < 0) {
            cv_.wait(lock, ready);
            return true;
        }
        return cv_.wait_for(lock, timeout, ready);
    }

    unsigned waits() const { return waits_; }
    void set_error() { error_ = true; }

private:
    RingMem<nicoff_cqe> ring_;
    CqConsumer cq_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::atomic<unsigned> waits_{0};
    bool error_ = false;
};

// An owner that records the local part of every tag it is handed.
struct Owner {
    std::vector<std::uint64_t> got;
    Dispatcher::Owner id = 0;
    Owner(Dispatcher &d) {
        id = d.add([this](const nicoff_cqe &c) { got.push_back(Dispatcher::local(c.tag)); });
    }
};

// Two owners on one ring, their completions interleaved: each gets its
// own, in order, whichever of them waits.
void two_owners_interleaved(void **) {
    MemSource src;
    Dispatcher d(src);
    Owner a(d), b(d);
    assert_int_not_equal(a.id, b.id);
    assert_int_not_equal(a.id, 0);
    src.complete(Dispatcher::tag(a.id, 1));
    src.complete(Dispatcher::tag(b.id, 1));
    src.complete(Dispatcher::tag(a.id, 2));
    src.complete(Dispatcher::tag(b.id, 2));
    src.complete(Dispatcher::tag(b.id, 3));
    src.complete(Dispatcher::tag(a.id, 3));
    assert_true(d.wait_until([&] { return a.got.size() == 3; }, Deadline::after(5s), Pacing{}));
    assert_true((a.got == std::vector<std::uint64_t>{1, 2, 3}));
    assert_true((b.got == std::vector<std::uint64_t>{1, 2, 3}));

    // The same from a card thread, over time: b waits, a's arrive meanwhile.
    std::thread card([&] {
        for (std::uint64_t i = 4; i < 10; i++) {
            src.complete(Dispatcher::tag(i % 2 ? a.id : b.id, i));
            std::this_thread::sleep_for(1ms);
        }
    });
    const bool ok = d.wait_until([&] { return b.got.size() == 6; }, Deadline::after(10s), Pacing{});
    card.join();
    assert_true(ok);
    assert_true(d.wait_until([&] { return a.got.size() == 6; }, Deadline::after(10s), Pacing{}));
    assert_true((a.got == std::vector<std::uint64_t>{1, 2, 3, 5, 7, 9}));
    assert_true((b.got == std::vector<std::uint64_t>{1, 2, 3, 4, 6, 8}));
    assert_int_equal(d.unknown(), 0);
}

// Completions of no owner (an application's tag, an owner never
// registered, one that went away) are counted and reported as EPROTO,
// once; the known ones of the same batch still reach their owner.
void unknown_tag(void **) {
    MemSource src;
    Dispatcher d(src);
    Owner a(d);
    const Dispatcher::Owner gone = Owner(d).id;
    d.remove(gone);
    src.complete(7); // owner 0
    src.complete(Dispatcher::tag(a.id, 1));
    src.complete(Dispatcher::tag(a.id + 100, 2));
    src.complete(Dispatcher::tag(gone, 3));
    assert_int_equal(error_of([&] {
                         d.wait_until([&] { return a.got.size() == 1; }, Deadline::after(5s),
                                      Pacing{});
                     }),
                     EPROTO);
    assert_int_equal(a.got.size(), 1);
    assert_int_equal(d.unknown(), 3);
    assert_int_equal(d.last_unknown_tag(), Dispatcher::tag(gone, 3));
    assert_int_equal(error_of([&] { d.check(); }), 0); // reported once
    // A new owner does not get the id of the one that went away.
    Owner c(d);
    assert_int_not_equal(c.id, gone);
    assert_int_not_equal(c.id, a.id);
}

// Nothing comes: false once the deadline has passed, having slept in the
// source rather than spun; EIO when the source is in the error state.
void deadline_expiry(void **) {
    MemSource src;
    Dispatcher d(src);
    Owner a(d);
    const auto t0 = Clock::now();
    const Pacing p{.spin = 100us};
    assert_false(d.wait_until([] { return false; }, Deadline::after(50ms), p));
    const auto took = Clock::now() - t0;
    assert_true(took >= 50ms);
    assert_true(took < 5s);
    assert_true(src.waits() >= 1);
    assert_true(src.waits() < 20); // one sleep to the deadline, not a spin
    // A deadline already past: one look, no sleep.
    const unsigned waits = src.waits();
    src.complete(Dispatcher::tag(a.id, 1));
    assert_false(d.wait_until([] { return false; }, Deadline::after(0ms), p));
    assert_int_equal(a.got.size(), 1);
    assert_int_equal(src.waits(), waits);
    src.set_error();
    assert_int_equal(error_of([&] { d.wait_until([] { return false; }, Deadline::never(), p); }),
                     EIO);
}

// A silence deadline follows the completions: a stream with short gaps
// keeps the wait going until it stops.
void deadline_silence(void **) {
    MemSource src;
    Dispatcher d(src);
    Owner a(d);
    std::thread card([&] {
        for (std::uint64_t i = 0; i < 6; i++) {
            std::this_thread::sleep_for(20ms);
            src.complete(Dispatcher::tag(a.id, i));
        }
    });
    const auto t0 = Clock::now();
    const bool ok = d.wait_until([] { return false; }, Deadline::after_silence(1s), Pacing{});
    const auto took = Clock::now() - t0;
    card.join();
    assert_false(ok);
    assert_int_equal(a.got.size(), 6);
    assert_true(took >= 1s + 100ms);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_owners_interleaved),
        cmocka_unit_test(unknown_tag),
        cmocka_unit_test(deadline_expiry),
        cmocka_unit_test(deadline_silence),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
