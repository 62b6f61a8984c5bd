// CPU time of tasks from /proc (see procstat.hpp).
#include "procstat.hpp"

#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <memory>
#include <sstream>

namespace nicoff::bench {

namespace {
constexpr std::uint64_t pf_kthread = 0x00200000; // PF_KTHREAD in task flags
} // namespace

bool parse_proc_stat(const std::string &line, TaskCpu &out, std::uint64_t &flags) {
    // "pid (comm) state ppid ..." - comm may hold spaces and parentheses,
    // so it ends at the last ')'.
    const auto open = line.find('(');
    const auto close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open)
        return false;
    out.pid = std::atoi(line.c_str());
    out.comm = line.substr(open + 1, close - open - 1);
    std::istringstream rest(line.substr(close + 1));
    // Fields 3.. : state(3) ppid pgrp session tty_nr tpgid flags(9) minflt
    // cminflt majflt cmajflt utime(14) stime(15)
    std::string field;
    std::uint64_t utime = 0, stime = 0;
    out.cpu = -1;
    for (int n = 3; n <= 39; n++) {
        // Fields past stime are there on every kernel that has processor
        // (39); a line that ends before it has none.
        if (n > 15 && !(rest >> field))
            break;
        if (n == 39) {
            out.cpu = std::atoi(field.c_str());
            break;
        }
        if (n > 15)
            continue;
        if (!(rest >> field))
            return false;
        if (n == 9)
            flags = std::strtoull(field.c_str(), nullptr, 10);
        else if (n == 14)
            utime = std::strtoull(field.c_str(), nullptr, 10);
        else if (n == 15)
            stime = std::strtoull(field.c_str(), nullptr, 10);
    }
    out.ticks = utime + stime;
    return true;
}

bool parse_schedstat(const std::string &line, SchedStat &out) {
    std::istringstream in(line);
    return static_cast<bool>(in >> out.run_ns >> out.wait_ns >> out.slices);
}

std::optional<std::uint64_t> status_field(const std::string &status, const std::string &name) {
    std::istringstream in(status);
    std::string line;
    while (std::getline(in, line))
        if (line.compare(0, name.size(), name) == 0 && line.size() > name.size() &&
            line[name.size()] == ':')
            return std::strtoull(line.c_str() + name.size() + 1, nullptr, 10);
    return std::nullopt;
}

namespace {

std::optional<std::string> slurp(const std::string &path) {
    std::ifstream f(path);
    if (!f)
        return std::nullopt;
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

// The entries of dir whose names start with a digit: processes of /proc,
// tasks of /proc/<pid>/task.  None if dir is gone.
std::vector<std::string> numbered_entries(const std::string &dir) {
    std::vector<std::string> out;
    std::unique_ptr<DIR, int (*)(DIR *)> d(::opendir(dir.c_str()), ::closedir);
    if (!d)
        return out;
    while (const dirent *e = ::readdir(d.get()))
        if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
            out.emplace_back(e->d_name);
    return out;
}

} // namespace

std::optional<ProcessSched> process_sched(int pid) {
    const std::string dir = "/proc/" + std::to_string(pid);
    const auto ss = slurp(dir + "/schedstat");
    const auto st = slurp(dir + "/status");
    ProcessSched out;
    if (!ss || !st || !parse_schedstat(*ss, out.sched))
        return std::nullopt;
    const auto inv = status_field(*st, "nonvoluntary_ctxt_switches");
    if (!inv)
        return std::nullopt;
    out.involuntary = *inv;
    return out;
}

std::vector<TaskRun> all_tasks_run() {
    std::vector<TaskRun> out;
    for (const std::string &pid : numbered_entries("/proc")) {
        const std::string tdir = "/proc/" + pid + "/task";
        for (const std::string &tid : numbered_entries(tdir)) {
            const auto stat = slurp(tdir + "/" + tid + "/stat");
            const auto ss = slurp(tdir + "/" + tid + "/schedstat");
            TaskCpu tc;
            SchedStat sc;
            std::uint64_t flags = 0;
            // A task gone meanwhile has no files: it is left out.
            if (stat && ss && parse_proc_stat(*stat, tc, flags) && parse_schedstat(*ss, sc))
                out.push_back(TaskRun{tc.pid, tc.cpu, sc.run_ns});
        }
    }
    return out;
}

std::vector<TaskCpu> kernel_threads_cpu(const std::string &prefix) {
    std::vector<TaskCpu> out;
    for (const std::string &pid : numbered_entries("/proc")) {
        std::ifstream f("/proc/" + pid + "/stat");
        std::string line;
        if (!std::getline(f, line))
            continue; // the task is gone
        TaskCpu t;
        std::uint64_t flags = 0;
        if (parse_proc_stat(line, t, flags) && (flags & pf_kthread) &&
            t.comm.compare(0, prefix.size(), prefix) == 0)
            out.push_back(std::move(t));
    }
    return out;
}

} // namespace nicoff::bench
