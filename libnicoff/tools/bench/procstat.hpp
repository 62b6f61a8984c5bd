// CPU time of kernel threads, read from /proc/<pid>/stat.
#ifndef NICOFF_BENCH_PROCSTAT_HPP
#define NICOFF_BENCH_PROCSTAT_HPP

#include <cstdint>
#include <string>
#include <vector>

namespace nicoff::bench {

struct TaskCpu {
    int pid = 0;
    std::string comm;
    std::uint64_t ticks = 0; // utime + stime, in clock ticks (sysconf(_SC_CLK_TCK))
};

// Kernel threads (PF_KTHREAD) whose comm starts with `prefix`, e.g. the
// card threads "nicoff/0", "nicoff/1", ...
std::vector<TaskCpu> kernel_threads_cpu(const std::string &prefix);

// Parses one /proc/<pid>/stat line; false if it is malformed.
bool parse_proc_stat(const std::string &line, TaskCpu &out, std::uint64_t &flags);

} // namespace nicoff::bench

#endif // NICOFF_BENCH_PROCSTAT_HPP
