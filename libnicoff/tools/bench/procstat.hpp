// CPU time of tasks as the scheduler accounts it, read from /proc.
#ifndef NICOFF_BENCH_PROCSTAT_HPP
#define NICOFF_BENCH_PROCSTAT_HPP

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nicoff::bench {

struct TaskCpu {
    int pid = 0;
    std::string comm;
    std::uint64_t ticks = 0; // utime + stime, in clock ticks (sysconf(_SC_CLK_TCK))
    int cpu = -1;            // the CPU it last ran on (field 39); -1: not in the line
};

// Kernel threads (PF_KTHREAD) whose comm starts with `prefix`, e.g. the
// card threads "nicoff/0", "nicoff/1", ...
std::vector<TaskCpu> kernel_threads_cpu(const std::string &prefix);

// Parses one /proc/<pid>/stat line; false if it is malformed.
bool parse_proc_stat(const std::string &line, TaskCpu &out, std::uint64_t &flags);

// /proc/<pid>/schedstat: time on a CPU, time waiting for one (runnable),
// and the number of times it was given one.
struct SchedStat {
    std::uint64_t run_ns = 0;
    std::uint64_t wait_ns = 0;
    std::uint64_t slices = 0;
};
bool parse_schedstat(const std::string &line, SchedStat &out);

// One process's run time and involuntary context switches (preemptions);
// nullopt if it is gone or /proc lacks them.
struct ProcessSched {
    SchedStat sched;
    std::uint64_t involuntary = 0;
};
std::optional<ProcessSched> process_sched(int pid);

// The value of "name:" in a /proc/<pid>/status text; nullopt if absent.
std::optional<std::uint64_t> status_field(const std::string &status, const std::string &name);

// Every task (thread) of the machine: its id, last CPU and run time.
struct TaskRun {
    int tid = 0;
    int cpu = -1;
    std::uint64_t run_ns = 0;
};
std::vector<TaskRun> all_tasks_run();

} // namespace nicoff::bench

#endif // NICOFF_BENCH_PROCSTAT_HPP
