// CPU time of kernel threads from /proc.
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
    for (int n = 3; n <= 15; n++) {
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

std::vector<TaskCpu> kernel_threads_cpu(const std::string &prefix) {
    std::vector<TaskCpu> out;
    std::unique_ptr<DIR, int (*)(DIR *)> dir(::opendir("/proc"), ::closedir);
    if (!dir)
        return out;
    while (const dirent *d = ::readdir(dir.get())) {
        if (d->d_name[0] < '0' || d->d_name[0] > '9')
            continue;
        std::ifstream f(std::string("/proc/") + d->d_name + "/stat");
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
