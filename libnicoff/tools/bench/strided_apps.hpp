// The strided suite's application kernels (seed 004 section 6, Fig. 8):
// what each method of moving strided data costs a program that does more
// than move it.  See strided_apps.cpp.
#ifndef NICOFF_BENCH_STRIDED_APPS_HPP
#define NICOFF_BENCH_STRIDED_APPS_HPP

#include "bench.hpp"

#include <vector>

namespace nicoff::bench {

// The kernels' options, for the suite's table.
std::vector<OptionSpec> strided_app_options();

// Runs the kernels --apps names (none: nothing) and adds their records.
void run_strided_apps(Context &ctx);

} // namespace nicoff::bench

#endif // NICOFF_BENCH_STRIDED_APPS_HPP
