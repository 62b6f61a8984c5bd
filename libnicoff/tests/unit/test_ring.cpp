// Unit tests of the ring index logic (src/ring.hpp), single-threaded: the
// test plays the card by writing the card's indices by hand.
#include "ring.hpp"
#include "test_rings.hpp"

// Last: cmocka's macros (fail, ...) clash with the standard headers.
#include "cmocka.hpp"

using namespace nicoff::detail;
using nicoff::test::RingMem;

namespace {

void test_pow2(void **) {
    assert_false(is_pow2(0));
    assert_true(is_pow2(1));
    assert_true(is_pow2(2));
    assert_false(is_pow2(3));
    assert_true(is_pow2(0x80000000u));
    assert_false(is_pow2(0xffffffffu));
    assert_int_equal(ring_bytes(8, sizeof(nicoff_cmd)), NICOFF_RING_HDR_SIZE + 8 * 64);
}

void test_used_free_wrap(void **) {
    // Free-running indices straddling 2^32.
    assert_int_equal(ring_used(5, 0xfffffffeu), 7);
    assert_int_equal(ring_free(8, 5, 0xfffffffeu), 1);
    assert_int_equal(ring_used(0, 0), 0);
    assert_int_equal(ring_free(8, 0x80000000u, 0x80000000u), 8);
    assert_int_equal(ring_used(0x10u, 0xfffffff8u), 0x18);
}

void test_advance(void **) {
    // Normal, no wrap: last 10, limit 20.
    assert_true(index_advance_ok(10, 10, 20));
    assert_true(index_advance_ok(10, 15, 20));
    assert_true(index_advance_ok(10, 20, 20));
    assert_false(index_advance_ok(10, 21, 20)); // past the limit
    assert_false(index_advance_ok(10, 9, 20));  // backwards
    // Across 2^32.
    assert_true(index_advance_ok(0xfffffff0u, 0xfffffff0u, 0x10u));
    assert_true(index_advance_ok(0xfffffff0u, 0xffffffffu, 0x10u));
    assert_true(index_advance_ok(0xfffffff0u, 0x0u, 0x10u));
    assert_true(index_advance_ok(0xfffffff0u, 0x10u, 0x10u));
    assert_false(index_advance_ok(0xfffffff0u, 0x11u, 0x10u));
    assert_false(index_advance_ok(0xfffffff0u, 0xffffffefu, 0x10u));
    assert_false(index_advance_ok(0xfffffff0u, 0x80000000u, 0x10u));
}

// The card consumes `n` commands: checks their tags, advances its index.
void card_consume(RingMem<nicoff_cmd> &r, std::uint32_t n, std::uint64_t &next_tag) {
    std::uint32_t c = r.hdr()->consumer;
    for (std::uint32_t i = 0; i < n; i++, c++)
        assert_int_equal(r.slot(c).tag, next_tag++);
    r.hdr()->consumer = c;
}

void test_producer_full_and_wrap(void **) {
    constexpr std::uint32_t entries = 8;
    RingMem<nicoff_cmd> r(entries, 0xfffffff0u); // wraps after 16 commands
    CmdProducer p;
    assert_true(p.attach(r.hdr(), r.slots(), entries));
    assert_int_equal(p.free_slots(), entries);

    std::uint64_t tag = 0, card_tag = 0;
    nicoff_cmd batch[entries + 3];
    for (int round = 0; round < 10; round++) {
        for (auto &c : batch)
            c = nicoff_cmd{}, c.tag = tag++;
        // Only `entries` fit into an empty ring; the rest is refused.
        PostResult res = p.post(batch, entries + 3);
        assert_false(res.broken);
        assert_int_equal(res.posted, entries);
        tag -= 3;
        assert_int_equal(r.hdr()->producer, p.producer());
        assert_int_equal(p.free_slots(), 0);
        res = p.post(batch, 1); // full
        assert_int_equal(res.posted, 0);
        assert_false(res.broken);
        card_consume(r, 5, card_tag);
        assert_int_equal(p.free_slots(), 5);
        card_consume(r, 3, card_tag);
    }
    // 80 commands went through a ring whose indices started 16 below 2^32.
    assert_int_equal(card_tag, 80);
    assert_int_equal(p.producer(), 0xfffffff0u + 80);
    assert_false(p.broken());
}

void test_producer_kick_flag(void **) {
    RingMem<nicoff_cmd> r(4, 0);
    CmdProducer p;
    assert_true(p.attach(r.hdr(), r.slots(), 4));
    nicoff_cmd c{};
    PostResult res = p.post(&c, 1);
    assert_int_equal(res.posted, 1);
    assert_false(res.kick);
    r.hdr()->flags = NICOFF_RING_NEED_WAKEUP;
    res = p.post(&c, 1);
    assert_int_equal(res.posted, 1);
    assert_true(res.kick);
    // Nothing posted, nothing to kick for.
    r.hdr()->consumer = 2;
    res = p.post(&c, 0);
    assert_int_equal(res.posted, 0);
    assert_false(res.kick);
}

void test_producer_hostile_consumer(void **) {
    {
        // Card claims to have consumed more than was posted.
        RingMem<nicoff_cmd> r(8, 100);
        CmdProducer p;
        assert_true(p.attach(r.hdr(), r.slots(), 8));
        nicoff_cmd c{};
        assert_int_equal(p.post(&c, 1).posted, 1);
        r.hdr()->consumer = 102;
        assert_int_equal(p.free_slots(), 0);
        assert_true(p.broken());
        PostResult res = p.post(&c, 1);
        assert_true(res.broken);
        assert_int_equal(res.posted, 0);
        assert_int_equal(r.hdr()->producer, 101); // nothing more published
    }
    {
        // Card index moves backwards.
        RingMem<nicoff_cmd> r(8, 100);
        CmdProducer p;
        assert_true(p.attach(r.hdr(), r.slots(), 8));
        nicoff_cmd cmds[8] = {};
        assert_int_equal(p.post(cmds, 8).posted, 8);
        r.hdr()->consumer = 104;
        assert_int_equal(p.free_slots(), 4);
        r.hdr()->consumer = 103;
        assert_true(p.post(cmds, 8).broken);
    }
    {
        // Card index far out of range (wrapped garbage).
        RingMem<nicoff_cmd> r(8, 0);
        CmdProducer p;
        assert_true(p.attach(r.hdr(), r.slots(), 8));
        nicoff_cmd cmds[8] = {};
        assert_int_equal(p.post(cmds, 8).posted, 8);
        r.hdr()->consumer = 0xdeadbeefu;
        assert_true(p.post(cmds, 1).broken);
    }
}

void test_attach_checks(void **) {
    RingMem<nicoff_cmd> r(8, 0);
    CmdProducer p;
    assert_false(p.attach(r.hdr(), r.slots(), 16)); // header says 8
    assert_false(p.attach(r.hdr(), r.slots(), 6));  // not a power of two
    r.hdr()->consumer = 9;                          // ahead of producer 0
    assert_false(p.attach(r.hdr(), r.slots(), 8));
    RingMem<nicoff_cqe> q(8, 0);
    CqConsumer cq;
    q.hdr()->producer = 9; // more than 8 completions
    assert_false(cq.attach(q.hdr(), q.slots(), 8));
    q.hdr()->producer = 8;
    assert_true(cq.attach(q.hdr(), q.slots(), 8));
    assert_int_equal(cq.available(), 8);
}

// The card completes `n` commands with consecutive tags.
void card_complete(RingMem<nicoff_cqe> &q, std::uint32_t n, std::uint64_t &tag) {
    std::uint32_t p = q.hdr()->producer;
    for (std::uint32_t i = 0; i < n; i++, p++) {
        q.slot(p) = nicoff_cqe{};
        q.slot(p).tag = tag++;
    }
    q.hdr()->producer = p;
}

void test_consumer_empty_full_wrap(void **) {
    constexpr std::uint32_t entries = 4;
    RingMem<nicoff_cqe> q(entries, 0xfffffffdu);
    CqConsumer cq;
    assert_true(cq.attach(q.hdr(), q.slots(), entries));
    nicoff_cqe out[8];
    assert_int_equal(cq.available(), 0);
    assert_int_equal(cq.drain(out, 8), 0);

    std::uint64_t tag = 0, seen = 0;
    for (int round = 0; round < 6; round++) {
        card_complete(q, entries, tag); // full
        assert_int_equal(cq.available(), entries);
        assert_int_equal(cq.drain(out, 3), 3);
        for (int i = 0; i < 3; i++)
            assert_int_equal(out[i].tag, seen++);
        assert_int_equal(q.hdr()->consumer, cq.consumer());
        assert_int_equal(cq.drain(out, 8), 1);
        assert_int_equal(out[0].tag, seen++);
        assert_int_equal(cq.drain(out, 8), 0);
    }
    assert_int_equal(seen, 24);
    assert_int_equal(cq.consumer(), 0xfffffffdu + 24);
    assert_false(cq.broken());
}

void test_consumer_hostile_producer(void **) {
    {
        RingMem<nicoff_cqe> q(4, 7);
        CqConsumer cq;
        assert_true(cq.attach(q.hdr(), q.slots(), 4));
        q.hdr()->producer = 7 + 5; // 5 completions in a ring of 4
        nicoff_cqe out[8];
        assert_int_equal(cq.drain(out, 8), 0);
        assert_true(cq.broken());
        assert_int_equal(q.hdr()->consumer, 7);
        q.hdr()->producer = 8; // even a sane value later is not trusted
        assert_int_equal(cq.available(), 0);
    }
    {
        RingMem<nicoff_cqe> q(4, 7);
        CqConsumer cq;
        assert_true(cq.attach(q.hdr(), q.slots(), 4));
        std::uint64_t tag = 0;
        card_complete(q, 3, tag);
        assert_int_equal(cq.available(), 3);
        q.hdr()->producer = 9; // backwards from 10
        nicoff_cqe out[8];
        assert_int_equal(cq.drain(out, 8), 0);
        assert_true(cq.broken());
    }
}

void test_cq_side_kick(void **) {
    RingMem<nicoff_cmd> r(4, 0);
    assert_false(cq_side_needs_kick(r.hdr()));
    r.hdr()->flags = NICOFF_RING_NEED_WAKEUP;
    assert_false(cq_side_needs_kick(r.hdr())); // asleep, but nothing pending
    r.hdr()->producer = 2;
    assert_true(cq_side_needs_kick(r.hdr()));
    r.hdr()->consumer = 2;
    assert_false(cq_side_needs_kick(r.hdr()));
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pow2),
        cmocka_unit_test(test_used_free_wrap),
        cmocka_unit_test(test_advance),
        cmocka_unit_test(test_producer_full_and_wrap),
        cmocka_unit_test(test_producer_kick_flag),
        cmocka_unit_test(test_producer_hostile_consumer),
        cmocka_unit_test(test_attach_checks),
        cmocka_unit_test(test_consumer_empty_full_wrap),
        cmocka_unit_test(test_consumer_hostile_producer),
        cmocka_unit_test(test_cq_side_kick),
    };
    return cmocka_run_group_tests_name("libnicoff ring index logic", tests, nullptr, nullptr);
}
