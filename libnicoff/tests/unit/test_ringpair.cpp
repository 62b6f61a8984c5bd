// Posting and polling against an in-process ring pair in plain memory,
// with a second thread playing the card: millions of commands, every tag
// completed exactly once and in order, through the same ring code that
// nicoff::Port uses (src/ring.hpp), doorbell protocol included.
#include "ring.hpp"
#include "test_rings.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

// Last: cmocka's macros (fail, ...) clash with the standard headers.
#include "cmocka.hpp"

using namespace nicoff::detail;
using nicoff::test::RingMem;
using namespace std::chrono_literals;

namespace {

std::uint64_t ops_from_env(std::uint64_t dflt) {
    const char *s = std::getenv("NICOFF_RINGPAIR_OPS");
    return s && *s ? std::strtoull(s, nullptr, 0) : dflt;
}

constexpr std::uint64_t result_of(std::uint64_t tag) { return tag * 3 + 1; }

// The card: takes commands only when the completion ring has room, one
// completion per command; after `spin_limit` idle passes it announces
// NEED_WAKEUP, fences, looks again and sleeps until kicked (0: never
// sleeps).  A sleep that times out while work is pending is a lost wake-up.
class FakeCard {
public:
    FakeCard(RingMem<nicoff_cmd> &cmd, RingMem<nicoff_cqe> &cq, std::uint32_t spin_limit,
             std::uint32_t budget)
        : cmd_(cmd), cq_(cq), spin_limit_(spin_limit), budget_(budget) {}

    void start() {
        thread_ = std::thread([this] { run(); });
    }
    void stop() {
        {
            std::lock_guard lock(mu_);
            stop_.store(true);
        }
        cv_.notify_one();
        thread_.join();
    }

    // The doorbell (what the KICK ioctl does in the kernel).
    void kick() {
        kicks_.fetch_add(1, std::memory_order_relaxed);
        {
            std::lock_guard lock(mu_);
            kicked_ = true;
        }
        cv_.notify_one();
    }

    bool protocol_error() const { return protocol_error_.load(); }
    std::uint64_t sleeps() const { return sleeps_.load(); }
    std::uint64_t lost_wakeups() const { return lost_wakeups_.load(); }
    std::uint64_t kicks() const { return kicks_.load(); }
    bool asleep() const { return asleep_.load(); }

private:
    bool has_work() const {
        const std::uint32_t avail = load_acquire(&cmd_.hdr()->producer) - cmd_cons_;
        if (avail == 0)
            return false;
        const std::uint32_t used = cq_prod_ - load_acquire(&cq_.hdr()->consumer);
        if (avail > cmd_.entries() || used > cq_.entries())
            return true; // garbage counts as work: the next pass reports it
        return used < cq_.entries();
    }

    void set_need_wakeup(bool on) {
        if (on)
            __atomic_fetch_or(&cmd_.hdr()->flags, NICOFF_RING_NEED_WAKEUP, __ATOMIC_RELAXED);
        else
            __atomic_fetch_and(&cmd_.hdr()->flags, ~NICOFF_RING_NEED_WAKEUP, __ATOMIC_RELAXED);
    }

    void sleep() {
        {
            std::lock_guard lock(mu_);
            kicked_ = false;
        }
        set_need_wakeup(true);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (!has_work()) {
            sleeps_.fetch_add(1);
            asleep_ = true;
            std::unique_lock lock(mu_);
            if (!cv_.wait_for(lock, 2s, [this] { return kicked_ || stop_.load(); }) && has_work())
                lost_wakeups_.fetch_add(1);
            asleep_ = false;
        }
        set_need_wakeup(false);
    }

    void run() {
        cmd_cons_ = cmd_.hdr()->consumer;
        cq_prod_ = cq_.hdr()->producer;
        std::uint32_t idle = 0;
        for (;;) {
            if (stop_.load(std::memory_order_relaxed))
                return;
            const std::uint32_t avail = load_acquire(&cmd_.hdr()->producer) - cmd_cons_;
            const std::uint32_t used = cq_prod_ - load_acquire(&cq_.hdr()->consumer);
            if (avail > cmd_.entries() || used > cq_.entries()) {
                protocol_error_ = true;
                return;
            }
            const std::uint32_t n = std::min({avail, cq_.entries() - used, budget_});
            if (n) {
                for (std::uint32_t i = 0; i < n; i++) {
                    nicoff_cmd c;
                    std::memcpy(&c, &cmd_.slot(cmd_cons_++), sizeof(c));
                    nicoff_cqe &e = cq_.slot(cq_prod_++);
                    e = nicoff_cqe{};
                    e.tag = c.tag;
                    e.opcode = c.opcode;
                    e.result = result_of(c.tag);
                }
                store_release(&cmd_.hdr()->consumer, cmd_cons_);
                store_release(&cq_.hdr()->producer, cq_prod_);
                idle = 0;
                continue;
            }
            if (spin_limit_ == 0 || ++idle < spin_limit_) {
                if ((idle & 63) == 0)
                    std::this_thread::yield();
                continue;
            }
            sleep();
            idle = 0;
        }
    }

    RingMem<nicoff_cmd> &cmd_;
    RingMem<nicoff_cqe> &cq_;
    const std::uint32_t spin_limit_;
    const std::uint32_t budget_;
    std::uint32_t cmd_cons_ = 0;
    std::uint32_t cq_prod_ = 0;
    std::thread thread_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool kicked_ = false;           // under mu_
    std::atomic<bool> stop_{false}; // set under mu_ too, so no wake-up is missed
    std::atomic<bool> asleep_{false};
    std::atomic<bool> protocol_error_{false};
    std::atomic<std::uint64_t> sleeps_{0};
    std::atomic<std::uint64_t> lost_wakeups_{0};
    std::atomic<std::uint64_t> kicks_{0};
};

// Both sides of a port, as nicoff::Port drives them.
struct Host {
    Host(RingMem<nicoff_cmd> &cmd_ring, RingMem<nicoff_cqe> &cq_ring, FakeCard &c)
        : cmd_hdr(cmd_ring.hdr()), card(c) {
        assert_true(cmd.attach(cmd_ring.hdr(), cmd_ring.slots(), cmd_ring.entries()));
        assert_true(cq.attach(cq_ring.hdr(), cq_ring.slots(), cq_ring.entries()));
    }

    // Posting side: like Port::try_post_batch.
    std::uint32_t post(std::uint64_t first_tag, std::uint32_t n) {
        nicoff_cmd batch[64];
        n = std::min<std::uint32_t>(n, 64);
        for (std::uint32_t i = 0; i < n; i++) {
            batch[i] = nicoff_cmd{};
            batch[i].opcode = NICOFF_OP_NOP;
            batch[i].tag = first_tag + i;
        }
        const PostResult r = cmd.post(batch, n);
        if (r.broken)
            post_broken = true; // checked by the test's thread: no cmocka here
        if (r.kick) {
            card.kick();
            kicks.fetch_add(1, std::memory_order_relaxed);
        }
        return r.posted;
    }

    // Completion side: like Port::poll; checks order and payload.
    std::uint32_t poll(std::uint64_t &next_expected) {
        nicoff_cqe out[64];
        const std::uint32_t n = cq.drain(out, 64);
        assert_false(cq.broken());
        if (n && cq_side_needs_kick(cmd_hdr)) {
            card.kick();
            kicks.fetch_add(1, std::memory_order_relaxed);
        }
        for (std::uint32_t i = 0; i < n; i++) {
            if (out[i].tag != next_expected)
                fail_msg("completion %u: tag %llu, expected %llu", i,
                         static_cast<unsigned long long>(out[i].tag),
                         static_cast<unsigned long long>(next_expected));
            assert_int_equal(out[i].result, result_of(next_expected));
            assert_int_equal(out[i].status, 0);
            assert_int_equal(out[i].opcode, NICOFF_OP_NOP);
            next_expected++;
        }
        return n;
    }

    nicoff_ring_hdr *cmd_hdr;
    FakeCard &card;
    CmdProducer cmd;
    CqConsumer cq;
    std::atomic<std::uint64_t> kicks{0};
    std::atomic<bool> post_broken{false};
};

// One thread posts and polls; batch sizes cycle through 1..max_batch.
void run_single_thread(std::uint64_t ops, std::uint32_t spin_limit, std::uint32_t max_batch,
                       std::uint32_t pause_every) {
    RingMem<nicoff_cmd> cmd_ring(64, 0xffffffffu - 1000);
    RingMem<nicoff_cqe> cq_ring(128, 0xffffffffu - 3000);
    FakeCard card(cmd_ring, cq_ring, spin_limit, 16);
    Host host(cmd_ring, cq_ring, card);
    card.start();

    std::uint64_t posted = 0, done = 0, pauses = 0;
    std::uint64_t next_pause = pause_every ? pause_every : ops;
    std::uint32_t batch = 1, idle = 0;
    while (done < ops) {
        bool progress = false;
        if (posted < next_pause) {
            const auto want =
                static_cast<std::uint32_t>(std::min<std::uint64_t>(batch, next_pause - posted));
            const std::uint32_t k = host.post(posted, want);
            posted += k;
            progress = k != 0;
            batch = batch % max_batch + 1;
        }
        progress |= host.poll(done) != 0;
        if (posted == next_pause && done == posted && posted < ops) {
            // Let the card fall asleep: the next post must ring the doorbell.
            const auto until = std::chrono::steady_clock::now() + 2s;
            while (!card.asleep() && std::chrono::steady_clock::now() < until)
                std::this_thread::sleep_for(50us);
            pauses++;
            next_pause = std::min(ops, next_pause + pause_every);
        }
        if (!progress && (++idle & 63) == 0)
            std::this_thread::yield();
    }
    card.stop();
    assert_false(host.post_broken.load());
    assert_int_equal(done, ops);
    assert_int_equal(posted, ops);
    assert_false(card.protocol_error());
    assert_int_equal(card.lost_wakeups(), 0);
    assert_int_equal(card.kicks(), host.kicks.load());
    assert_int_equal(cmd_ring.hdr()->producer,
                     static_cast<std::uint32_t>(0xffffffffu - 1000 + ops));
    assert_int_equal(cq_ring.hdr()->consumer, static_cast<std::uint32_t>(0xffffffffu - 3000 + ops));
    if (spin_limit && pause_every) {
        // Every pause put the card to sleep and the next post woke it.
        assert_true(card.sleeps() >= pauses);
        assert_true(host.kicks.load() >= pauses);
        assert_true(pauses > 0);
    }
    print_message("%llu commands, %llu card sleeps, %llu kicks\n",
                  static_cast<unsigned long long>(ops),
                  static_cast<unsigned long long>(card.sleeps()),
                  static_cast<unsigned long long>(host.kicks.load()));
    if (spin_limit == 0)
        assert_int_equal(host.kicks.load(), 0); // a card that never sleeps never needs a kick
}

void test_spinning_card(void **) { run_single_thread(ops_from_env(4000000), 0, 32, 0); }

void test_sleeping_card(void **) { run_single_thread(ops_from_env(4000000) / 4, 200, 32, 4096); }

// Two host threads: one posts, one polls (the documented Port rule), while
// the card sleeps whenever it runs dry.
void test_split_sides(void **) {
    const std::uint64_t ops = ops_from_env(4000000) / 4;
    RingMem<nicoff_cmd> cmd_ring(32, 0xfffff000u);
    RingMem<nicoff_cqe> cq_ring(32, 0x7ffffff0u);
    FakeCard card(cmd_ring, cq_ring, 500, 8);
    Host host(cmd_ring, cq_ring, card);
    card.start();

    std::atomic<bool> poster_failed{false};
    std::thread poster([&] {
        std::uint64_t posted = 0;
        std::uint32_t batch = 1, idle = 0;
        while (posted < ops) {
            const auto want =
                static_cast<std::uint32_t>(std::min<std::uint64_t>(batch, ops - posted));
            const std::uint32_t k = host.post(posted, want);
            posted += k;
            batch = batch % 7 + 1;
            if (!k && (++idle & 63) == 0)
                std::this_thread::yield();
        }
        poster_failed = posted != ops;
    });
    std::uint64_t done = 0;
    std::uint32_t idle = 0;
    const auto deadline = std::chrono::steady_clock::now() + 120s;
    while (done < ops && std::chrono::steady_clock::now() < deadline) {
        if (!host.poll(done) && (++idle & 63) == 0)
            std::this_thread::yield();
    }
    poster.join();
    card.stop();
    assert_false(poster_failed.load());
    assert_false(host.post_broken.load());
    assert_int_equal(done, ops);
    assert_false(card.protocol_error());
    assert_int_equal(card.lost_wakeups(), 0);
}

// A full completion ring makes the command ring fill: posting then reports
// "full" instead of blocking, exactly cmd_entries + cq_entries commands are
// in flight, and draining completions wakes the card that went to sleep
// with commands pending (the completion-side doorbell).
void test_cq_full_backpressure(void **) {
    constexpr std::uint32_t cmd_entries = 8, cq_entries = 16;
    RingMem<nicoff_cmd> cmd_ring(cmd_entries, 0);
    RingMem<nicoff_cqe> cq_ring(cq_entries, 0);
    FakeCard card(cmd_ring, cq_ring, 100, 4);
    Host host(cmd_ring, cq_ring, card);
    card.start();

    std::uint64_t posted = 0;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (posted < cmd_entries + cq_entries && std::chrono::steady_clock::now() < deadline) {
        posted += host.post(posted, 3);
        std::this_thread::yield();
    }
    assert_int_equal(posted, cmd_entries + cq_entries);
    // The card cannot take more: everything stays refused, nothing blocks.
    for (int i = 0; i < 100; i++) {
        assert_int_equal(host.post(posted, 1), 0);
        std::this_thread::sleep_for(100us);
    }
    assert_int_equal(host.cmd.free_slots(), 0);
    // Wait until the card sleeps on its full completion ring.
    while (!card.asleep() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(1ms);
    assert_true(card.asleep());

    std::uint64_t done = 0;
    while (done < posted && std::chrono::steady_clock::now() < deadline)
        if (!host.poll(done))
            std::this_thread::yield();
    card.stop();
    assert_int_equal(done, posted);
    assert_int_equal(card.lost_wakeups(), 0);
    assert_true(host.kicks.load() >= 1); // the completion side rang the doorbell
    assert_false(card.protocol_error());
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spinning_card),
        cmocka_unit_test(test_sleeping_card),
        cmocka_unit_test(test_split_sides),
        cmocka_unit_test(test_cq_full_backpressure),
    };
    return cmocka_run_group_tests_name("libnicoff rings against a card thread", tests, nullptr,
                                       nullptr);
}
