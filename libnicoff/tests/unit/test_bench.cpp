// nicoff-bench's framework pieces that need no card: /proc/<pid>/stat
// parsing, statistics, option parsing, JSON records with nulls, tunables
// set for a scope (on files of a directory standing in for sysfs), the
// collective suites' card counts, the shared-memory barrier's safety.
#include "bench.hpp"
#include "collective.hpp"
#include "procstat.hpp"
#include "shmbarrier.hpp"
#include "tunable.hpp"

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

// Last: cmocka's macros (fail, ...) clash with the standard headers.
#include "cmocka.hpp"

using namespace nicoff::bench;

namespace {

void test_proc_stat(void **) {
    TaskCpu t;
    std::uint64_t flags = 0;
    // A kernel thread: flags has PF_KTHREAD (0x00200000 = 2097152 + 64).
    const std::string kthread = "812 (nicoff/0) S 2 0 0 0 -1 2129984 0 0 0 0 17 42 0 0 20 0 1 0";
    assert_true(parse_proc_stat(kthread, t, flags));
    assert_int_equal(t.pid, 812);
    assert_string_equal(t.comm.c_str(), "nicoff/0");
    assert_int_equal(t.ticks, 17 + 42);
    assert_true(flags & 0x00200000);
    // A comm with spaces and parentheses ends at the last ')'.
    const std::string odd = "99 (a) b (c) R 1 99 99 0 -1 4194304 5 0 0 0 3 4 0 0";
    assert_true(parse_proc_stat(odd, t, flags));
    assert_string_equal(t.comm.c_str(), "a) b (c");
    assert_int_equal(t.ticks, 7);
    assert_false(flags & 0x00200000);
    assert_int_equal(t.cpu, -1); // the line ends before field 39
    // A full line: field 39, processor, is the CPU it last ran on.
    std::string full = "7 (x) R 1 7 7 0 -1 4194304 0 0 0 0 3 4";
    for (int n = 16; n <= 38; n++)
        full += " 0";
    full += " 5 0 0";
    assert_true(parse_proc_stat(full, t, flags));
    assert_int_equal(t.cpu, 5);
    assert_int_equal(t.ticks, 7);
    assert_false(parse_proc_stat("12 (short) S 1 2 3", t, flags));
    assert_false(parse_proc_stat("garbage", t, flags));
    // This process is no kernel thread: never counted, whatever its name.
    for (const TaskCpu &k : kernel_threads_cpu(""))
        assert_true(k.pid != 0);
}

void test_schedstat(void **) {
    SchedStat ss;
    assert_true(parse_schedstat("8612860 17109098 5\n", ss));
    assert_true(ss.run_ns == 8612860 && ss.wait_ns == 17109098 && ss.slices == 5);
    assert_false(parse_schedstat("12 x", ss));
    const std::string status = "Name:\tcat\nvoluntary_ctxt_switches:\t3\n"
                               "nonvoluntary_ctxt_switches:\t42\n";
    assert_true(status_field(status, "nonvoluntary_ctxt_switches") == 42u);
    assert_true(status_field(status, "voluntary_ctxt_switches") == 3u);
    assert_false(status_field(status, "ctxt_switches").has_value());
    // This process, as the cpu_share counter is read; its run time grows.
    const auto a = process_sched(::getpid());
    assert_true(a.has_value());
    // 20 ms of this process's own CPU time, however loaded the machine.
    const std::clock_t end = std::clock() + CLOCKS_PER_SEC / 50;
    while (std::clock() < end) {
    }
    const auto b = process_sched(::getpid());
    assert_true(b.has_value() && b->sched.run_ns > a->sched.run_ns);
    assert_false(process_sched(-1).has_value());
    bool self = false;
    for (const TaskRun &tr : all_tasks_run())
        self = self || (tr.tid == ::getpid() && tr.cpu >= 0);
    assert_true(self);
}

void test_summary(void **) {
    const Summary s = summarize({5, 1, 4, 2, 3});
    assert_true(s.n == 5 && s.min == 1 && s.max == 5);
    assert_true(s.median == 3 && s.mean == 3);
    assert_true(summarize({1, 2, 3, 4}).median == 2.5);
    std::vector<double> v;
    for (int i = 1; i <= 1000; i++)
        v.push_back(i);
    assert_true(summarize(v).p99 == 990);
    assert_true(summarize({}).n == 0);
}

// Whether f throws what main() reports as a usage error.
template <class F>
bool throws_invalid_argument(F f) {
    try {
        f();
    } catch (const std::invalid_argument &) {
        return true;
    }
    return false;
}

void test_options(void **) {
    std::vector<OptionSpec> specs = {{"runs", "", "10"}, {"secs", "", "1.5"}, {"name", "", "x"}};
    Options o(specs, {{"runs", "42"}});
    assert_int_equal(o.u64("runs"), 42);
    assert_true(o.number("secs") == 1.5);
    assert_string_equal(o.str("name").c_str(), "x");
    Options bad(specs, {{"runs", "4x"}, {"secs", "-1"}});
    assert_true(throws_invalid_argument([&] { (void)bad.u64("runs"); }));
    assert_true(throws_invalid_argument([&] { (void)bad.number("secs"); }));

    // Comma-separated lists: empty items skipped, a numeric one must have some.
    std::vector<OptionSpec> lists = {{"ns", "", "2,3"}, {"algs", "", ""}};
    Options l(lists, {{"algs", "tree,,auto,"}});
    assert_true(l.u64_list("ns") == (std::vector<std::uint64_t>{2, 3}));
    assert_true(l.list("algs") == (std::vector<std::string>{"tree", "auto"}));
    Options none(lists, {{"ns", ","}});
    assert_true(throws_invalid_argument([&] { (void)none.u64_list("ns"); }));
    // An item that is no unsigned integer is a usage error naming the option.
    for (const char *bad_item : {"8,x", "8,4x", "-1", "8, 64"}) {
        Options b(lists, {{"ns", bad_item}});
        try {
            (void)b.u64_list("ns");
            fail_msg("--ns %s accepted", bad_item);
        } catch (const std::invalid_argument &e) {
            assert_non_null(std::strstr(e.what(), "--ns"));
        }
    }
}

// The errno of the std::system_error f throws, 0 if it throws none.
template <class F>
int system_error_of(F f) {
    try {
        f();
    } catch (const std::system_error &e) {
        return e.code().value();
    }
    return 0;
}

void test_tunable(void **) {
    char tmpl[] = "/tmp/nicoff-tunable.XXXXXX";
    const char *dir = ::mkdtemp(tmpl);
    assert_non_null(dir);
    const std::string path = std::string(dir) + "/fault_drop_ppm";
    // As sysfs shows a parameter: the value and a newline.
    std::ofstream(path) << "7\n";
    assert_string_equal(read_tunable("fault_drop_ppm", dir).c_str(), "7");
    {
        const TunableOverride o("fault_drop_ppm", "1000", dir);
        assert_string_equal(o.previous().c_str(), "7");
        assert_string_equal(read_tunable("fault_drop_ppm", dir).c_str(), "1000");
    }
    assert_string_equal(read_tunable("fault_drop_ppm", dir).c_str(), "7");
    // Put back when the scope is left by an exception too.
    try {
        const TunableOverride o("fault_drop_ppm", "5", dir);
        assert_string_equal(read_tunable("fault_drop_ppm", dir).c_str(), "5");
        throw std::runtime_error("case failed");
    } catch (const std::runtime_error &) {
    }
    assert_string_equal(read_tunable("fault_drop_ppm", dir).c_str(), "7");
    // One at a time: a second override would put back what the first one set.
    {
        const TunableOverride o("fault_drop_ppm", "5", dir);
        assert_int_equal(system_error_of([&] { TunableOverride o2("fault_drop_ppm", "6", dir); }),
                         EBUSY);
        assert_string_equal(read_tunable("fault_drop_ppm", dir).c_str(), "5");
    }
    assert_string_equal(read_tunable("fault_drop_ppm", dir).c_str(), "7");
    // Put back by a SIGTERM too, which still ends the process.
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        const TunableOverride o("fault_drop_ppm", "9", dir);
        ::kill(::getpid(), SIGTERM);
        ::_exit(read_tunable("fault_drop_ppm", dir) == "9" ? 0 : 1); // not reached
    }
    int st = 0;
    assert_int_equal(::waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    assert_string_equal(read_tunable("fault_drop_ppm", dir).c_str(), "7");
    // An ignored SIGTERM stays ignored while a tunable is overridden.
    struct sigaction ign {
    }, before{};
    ign.sa_handler = SIG_IGN;
    assert_int_equal(::sigaction(SIGTERM, &ign, &before), 0);
    {
        const TunableOverride o("fault_drop_ppm", "5", dir);
        ::kill(::getpid(), SIGTERM);
        assert_string_equal(read_tunable("fault_drop_ppm", dir).c_str(), "5");
    }
    assert_int_equal(::sigaction(SIGTERM, &before, nullptr), 0);
    assert_string_equal(read_tunable("fault_drop_ppm", dir).c_str(), "7");
    // A tunable that is not there is an error with its errno, before anything changes.
    assert_int_equal(system_error_of([&] { TunableOverride o("no_such", "1", dir); }), ENOENT);
    assert_int_equal(system_error_of([&] { write_tunable("no_such", "1", dir); }), ENOENT);
    assert_int_equal(::unlink(path.c_str()), 0);
    assert_int_equal(::rmdir(dir), 0);
}

// r alone: its JSON is json (one object in a list), its table's header
// ends in header.  Returns the table.
std::string check_record(const Record &r, const std::string &json, const char *header) {
    assert_string_equal(format_json({r}).c_str(), ("[\n " + json + "\n]\n").c_str());
    std::string table = format_table({r});
    assert_non_null(std::strstr(table.c_str(), header));
    return table;
}

void test_json_and_table(void **) {
    Context ctx("doorbell", Options(global_options(), {}));
    Record r = ctx.record("nop", "batch1", "rtt_us", 1.5, "us");
    r.nodes = 1;
    r.runs = 10;
    ctx.add(r);
    ctx.add(ctx.record("idle", std::nullopt, "idle_cpu_pct", NAN, "%"));
    const std::string json = format_json(ctx.records());
    assert_string_equal(json.c_str(),
                        "[\n"
                        " {\"suite\":\"doorbell\",\"case\":\"nop\",\"method\":\"batch1\","
                        "\"nodes\":1,\"bytes\":null,\"metric\":\"rtt_us\",\"value\":1.5,"
                        "\"unit\":\"us\",\"runs\":10},\n"
                        " {\"suite\":\"doorbell\",\"case\":\"idle\",\"method\":null,"
                        "\"nodes\":null,\"bytes\":null,\"metric\":\"idle_cpu_pct\","
                        "\"value\":null,\"unit\":\"%\",\"runs\":null}\n"
                        "]\n");
    assert_string_equal(format_json({}).c_str(), "[]\n");
    const std::string table = format_table(ctx.records());
    assert_non_null(std::strstr(table.c_str(), "suite     case  method"));
    assert_non_null(std::strstr(table.c_str(), "rtt_us"));
    assert_null(std::strstr(table.c_str(), "chunk"));
    // A suite's extra field comes last, in the JSON and in the table.
    Record s = ctx.record("square2d", "nic", "mb_per_s", 2.5, "MB/s");
    s.bytes = 512;
    s.chunk = 64;
    const std::string with_chunk =
        check_record(s,
                     "{\"suite\":\"doorbell\",\"case\":\"square2d\",\"method\":\"nic\","
                     "\"nodes\":null,\"bytes\":512,\"metric\":\"mb_per_s\",\"value\":2.5,"
                     "\"unit\":\"MB/s\",\"runs\":null,\"chunk\":64}",
                     "runs  chunk\n");
    assert_non_null(std::strstr(with_chunk.c_str(), "-     64\n"));
    Record c = ctx.record("channels", "card", "latency_us", 4.25, "us");
    c.channels = 16;
    const std::string with_channels =
        check_record(c,
                     "{\"suite\":\"doorbell\",\"case\":\"channels\",\"method\":\"card\","
                     "\"nodes\":null,\"bytes\":null,\"metric\":\"latency_us\",\"value\":4.25,"
                     "\"unit\":\"us\",\"runs\":null,\"channels\":16}",
                     "runs  channels\n");
    assert_null(std::strstr(with_channels.c_str(), "chunk"));
}

// Fields named when the record is made land where they would set one by one.
void test_fields(void **) {
    Context ctx("strided", Options(global_options(), {}));
    ctx.add("square2d", "nic", "mb_per_s", 2.5, "MB/s",
            {.nodes = 2, .bytes = 512, .runs = 3, .chunk = 64});
    ctx.add("channels", "card", "ratio", 1.5, "x", {.channels = 16});
    assert_string_equal(format_json(ctx.records()).c_str(),
                        "[\n"
                        " {\"suite\":\"strided\",\"case\":\"square2d\",\"method\":\"nic\","
                        "\"nodes\":2,\"bytes\":512,\"metric\":\"mb_per_s\",\"value\":2.5,"
                        "\"unit\":\"MB/s\",\"runs\":3,\"chunk\":64},\n"
                        " {\"suite\":\"strided\",\"case\":\"channels\",\"method\":\"card\","
                        "\"nodes\":null,\"bytes\":null,\"metric\":\"ratio\",\"value\":1.5,"
                        "\"unit\":\"x\",\"runs\":null,\"channels\":16}\n"
                        "]\n");
}

void test_card_counts(void **) {
    auto counts = [](const char *v, std::uint32_t cards) {
        return card_counts(Options({cards_option()}, {{"cards", v}}), cards);
    };
    using V = std::vector<std::uint32_t>;
    assert_true(counts("pow2", 8) == (V{2, 4, 8}));
    // Every card last, also when their number is no power of two.
    assert_true(counts("pow2", 6) == (V{2, 4, 6}));
    assert_true(counts("pow2", 1) == (V{1}));
    assert_true(counts("none", 8).empty());
    assert_true(counts("3,5", 8) == (V{3, 5}));
    assert_true(throws_invalid_argument([&] { (void)counts("9", 8); }));
    assert_true(throws_invalid_argument([&] { (void)counts("0", 8); }));
    assert_true(throws_invalid_argument([&] { (void)counts("2,x", 8); }));
}

// What the processes of the shm barrier test share: for each barrier, how
// many entered it; a process leaving barrier k must see all of them.
struct ShmTest {
    static constexpr std::uint32_t nbarriers = 300;
    ShmBarrierState state;
    std::atomic<std::uint32_t> entered[nbarriers];
    std::atomic<std::uint32_t> early; // leaves before every process entered
};

// n forked processes (more than this machine's CPUs, so that some sleep in
// the futex) through nbarriers barriers; false on an early leave.
bool shm_barrier_safe(std::uint32_t n, std::chrono::microseconds spin) {
    SharedMem<ShmTest> t;
    t->state.init(n);
    {
        Children kids;
        for (std::uint32_t r = 0; r < n; r++)
            kids.spawn([&, r] {
                ShmBarrier b(t->state, spin);
                for (std::uint32_t k = 0; k < ShmTest::nbarriers; k++) {
                    t->entered[k].fetch_add(1);
                    // Uneven arrivals: a different process is late each time.
                    if ((k + r) % n == 0)
                        std::this_thread::sleep_for(std::chrono::microseconds(100));
                    b.wait();
                    if (t->entered[k].load() != n)
                        t->early.fetch_add(1);
                }
                return 0;
            });
        if (kids.reap(120) != Children::Outcome::ok)
            return false;
    }
    for (const auto &e : t->entered)
        if (e.load() != n)
            return false;
    return t->early.load() == 0;
}

void test_shm_barrier(void **) {
    assert_true(shm_barrier_safe(8, std::chrono::microseconds(0)));
    assert_true(shm_barrier_safe(8, std::chrono::microseconds(20)));
    assert_true(shm_barrier_safe(2, std::chrono::microseconds(0)));
    // One process: every barrier returns at once.
    assert_true(shm_barrier_safe(1, std::chrono::microseconds(0)));
    ShmBarrierState none{};
    none.init(0);
    assert_true(throws_invalid_argument([&] { ShmBarrier b(none, std::chrono::microseconds(0)); }));
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proc_stat),      cmocka_unit_test(test_schedstat),
        cmocka_unit_test(test_summary),        cmocka_unit_test(test_options),
        cmocka_unit_test(test_json_and_table), cmocka_unit_test(test_tunable),
        cmocka_unit_test(test_fields),         cmocka_unit_test(test_card_counts),
        cmocka_unit_test(test_shm_barrier),
    };
    return cmocka_run_group_tests_name("nicoff-bench framework", tests, nullptr, nullptr);
}
