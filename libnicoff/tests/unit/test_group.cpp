// nicoff::barrier_schedule and the names and ids of groups, without a card:
// every algorithm's schedule, run abstractly for every member of groups of
// 1 to 70, is a barrier (everyone ends up having heard of everyone, every
// message is expected once); the step counts of seed 000.
#include "test_errors.hpp"

#include <nicoff/nicoff.hpp>

#include <cerrno>
#include <cstdint>
#include <deque>
#include <functional>
#include <set>
#include <system_error>
#include <vector>

// Last: cmocka's macros (fail, ...) clash with the standard headers.
#include "cmocka.hpp"

namespace {

using nicoff::barrier_schedule;
using nicoff::BarrierStep;
using nicoff::test::error_of;

// Run the schedules of n members; messages carry what their sender knows.
void check_barrier(std::uint32_t alg, std::uint32_t param, std::uint32_t n) {
    std::vector<std::vector<BarrierStep>> s(n);
    std::vector<std::size_t> step(n, 0);
    std::vector<std::vector<std::uint32_t>> got(n);
    std::vector<std::set<std::uint32_t>> know(n), heard(n);
    struct Msg {
        std::uint32_t from, to;
        std::set<std::uint32_t> k;
    };
    std::deque<Msg> q;
    for (std::uint32_t r = 0; r < n; r++) {
        s[r] = barrier_schedule(alg, param, r, n);
        got[r].assign(s[r].size(), 0);
        know[r].insert(r);
    }
    std::vector<bool> sent(n, false);
    for (;;) {
        bool moved = false;
        for (std::uint32_t r = 0; r < n; r++) {
            while (step[r] < s[r].size()) {
                if (!sent[r]) {
                    for (const std::uint32_t to : s[r][step[r]].send)
                        q.push_back({r, to, know[r]});
                    sent[r] = true;
                }
                if (got[r][step[r]] < s[r][step[r]].recv.size())
                    break;
                step[r]++;
                sent[r] = false;
                moved = true;
            }
        }
        if (q.empty() && !moved)
            break;
        if (q.empty())
            continue;
        // Deliver from the back now and then: another order than sending's.
        Msg m = q.size() % 3 ? q.front() : q.back();
        if (q.size() % 3)
            q.pop_front();
        else
            q.pop_back();
        assert_true(m.to < n);
        assert_true(heard[m.to].insert(m.from).second); // once per barrier
        bool found = false;
        for (std::size_t st = 0; st < s[m.to].size() && !found; st++) {
            for (const std::uint32_t f : s[m.to][st].recv) {
                if (f == m.from) {
                    got[m.to][st]++;
                    found = true;
                    break;
                }
            }
        }
        assert_true(found);
        know[m.to].insert(m.k.begin(), m.k.end());
    }
    for (std::uint32_t r = 0; r < n; r++) {
        assert_int_equal(step[r], s[r].size());
        assert_int_equal(know[r].size(), n);
    }
}

void test_schedules(void **) {
    for (std::uint32_t alg = NICOFF_BARRIER_PAIRWISE; alg < NICOFF_BARRIER_MAX; alg++)
        for (std::uint32_t n = 1; n <= 70; n++)
            check_barrier(alg, 0, n);
    for (std::uint32_t p : {2u, 3u, 7u})
        for (std::uint32_t n = 1; n <= 40; n++) {
            check_barrier(NICOFF_BARRIER_TREE, p, n);
            check_barrier(NICOFF_BARRIER_COMBINING, p, n);
        }
}

void test_step_counts(void **) {
    for (std::uint32_t n = 2; n <= 100; n++) {
        std::uint32_t lg = 0, lf = 0;
        while ((1u << lg) < n)
            lg++;
        while ((2u << lf) <= n)
            lf++;
        for (std::uint32_t r = 0; r < n; r++) {
            assert_int_equal(barrier_schedule(NICOFF_BARRIER_DISSEMINATION, 0, r, n).size(), lg);
            const auto pw = barrier_schedule(NICOFF_BARRIER_PAIRWISE, 0, r, n);
            if (!(n & (n - 1)))
                assert_int_equal(pw.size(), lf);
            else if (r < n - (1u << lf))
                assert_int_equal(pw.size(), lf + 2); // the two extra steps
        }
    }
    assert_int_equal(barrier_schedule(NICOFF_BARRIER_CENTRAL, 0, 0, 1).size(), 0);
}

void test_errors(void **) {
    assert_int_equal(error_of([] { barrier_schedule(NICOFF_BARRIER_AUTO, 0, 0, 4); }), EINVAL);
    assert_int_equal(error_of([] { barrier_schedule(NICOFF_BARRIER_MAX, 0, 0, 4); }), EINVAL);
    assert_int_equal(error_of([] { barrier_schedule(NICOFF_BARRIER_TREE, 0, 4, 4); }), EINVAL);
    assert_int_equal(error_of([] { barrier_schedule(NICOFF_BARRIER_TREE, 1, 0, 4); }), EINVAL);
    assert_int_equal(error_of([] { barrier_schedule(NICOFF_BARRIER_COMBINING, 1, 0, 4); }), EINVAL);
    assert_int_equal(error_of([] { barrier_schedule(NICOFF_BARRIER_TREE, 0, 0, 0); }), EINVAL);
}

// Run the broadcast from root: each member, once it holds the data, sends
// to its children; every message must be one its receiver expects.
void check_bcast_tree(std::uint32_t root, std::uint32_t n) {
    std::vector<nicoff::BcastTree> t(n);
    for (std::uint32_t r = 0; r < n; r++)
        t[r] = nicoff::bcast_tree(root, r, n);
    assert_false(t[root].parent.has_value());
    std::vector<std::uint32_t> received(n, 0), depth(n, 0);
    std::deque<std::uint32_t> holders = {root};
    std::uint32_t lg = 0;
    while ((1u << lg) < n)
        lg++;
    while (!holders.empty()) {
        const std::uint32_t r = holders.front();
        holders.pop_front();
        std::uint32_t prev_subtree = UINT32_MAX;
        for (const std::uint32_t c : t[r].children) {
            assert_true(c < n);
            assert_true(c != root);
            assert_true(t[c].parent.has_value());
            assert_int_equal(*t[c].parent, r); // the child waits for this very sender
            received[c]++;
            depth[c] = depth[r] + 1;
            assert_true(depth[c] <= lg);
            // Largest subtree first.
            std::uint32_t sub = 0;
            std::deque<std::uint32_t> walk = {c};
            while (!walk.empty()) {
                sub++;
                const std::uint32_t w = walk.front();
                walk.pop_front();
                walk.insert(walk.end(), t[w].children.begin(), t[w].children.end());
            }
            assert_true(sub <= prev_subtree);
            prev_subtree = sub;
            holders.push_back(c);
        }
    }
    for (std::uint32_t r = 0; r < n; r++)
        assert_int_equal(received[r], r == root ? 0 : 1);
    // The root sends ceil(log2 n) messages, as a binomial tree's does.
    assert_int_equal(t[root].children.size(), lg);
}

void test_bcast_tree(void **) {
    for (std::uint32_t n = 1; n <= 64; n++)
        for (std::uint32_t root = 0; root < n; root++)
            check_bcast_tree(root, n);
    // Relative rank 6 of 8 (root 0): parent 4, child 7.
    const nicoff::BcastTree t = nicoff::bcast_tree(0, 6, 8);
    assert_int_equal(*t.parent, 4);
    assert_int_equal(t.children.size(), 1);
    assert_int_equal(t.children[0], 7);
    // The same shape rotated: root 3 of 8, rank (6 + 3) % 8 = 1.
    const nicoff::BcastTree u = nicoff::bcast_tree(3, 1, 8);
    assert_int_equal(*u.parent, 7);
    assert_int_equal(u.children[0], 2);
    assert_int_equal(error_of([] { nicoff::bcast_tree(4, 0, 4); }), EINVAL);
    assert_int_equal(error_of([] { nicoff::bcast_tree(0, 4, 4); }), EINVAL);
    assert_int_equal(error_of([] { nicoff::bcast_tree(0, 0, 0); }), EINVAL);
}

void test_names_and_ids(void **) {
    for (std::uint32_t a = 0; a < NICOFF_BARRIER_MAX; a++) {
        const auto name = nicoff::barrier_algorithm_name(a);
        const auto back = nicoff::barrier_algorithm_from_name(name);
        assert_true(back.has_value());
        assert_int_equal(*back, a);
    }
    assert_true(nicoff::barrier_algorithm_name(NICOFF_BARRIER_DEFAULT) == "default");
    assert_int_equal(*nicoff::barrier_algorithm_from_name("default"), NICOFF_BARRIER_DEFAULT);
    assert_int_equal(*nicoff::barrier_algorithm_from_name("3"), NICOFF_BARRIER_TREE);
    assert_false(nicoff::barrier_algorithm_from_name("fastest").has_value());
    assert_false(nicoff::barrier_algorithm_from_name("7").has_value());
    assert_false(nicoff::barrier_algorithm_from_name("").has_value());
    // Same job and count, same id; otherwise (almost surely) another.
    assert_int_equal(nicoff::job_group_id("job-1", 0), nicoff::job_group_id("job-1", 0));
    assert_int_not_equal(nicoff::job_group_id("job-1", 0), nicoff::job_group_id("job-1", 1));
    assert_int_not_equal(nicoff::job_group_id("job-1", 0), nicoff::job_group_id("job-2", 0));
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schedules),     cmocka_unit_test(test_step_counts),
        cmocka_unit_test(test_errors),        cmocka_unit_test(test_bcast_tree),
        cmocka_unit_test(test_names_and_ids),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
