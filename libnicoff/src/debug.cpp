// NICOFF_DEBUG (see debug.hpp).
#include "debug.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include <unistd.h>

namespace nicoff::detail {

namespace {

// "1".."9", or any other non-empty value but "0" as 1: a variable set to
// "yes" means the user wants the log.
int read_level() noexcept {
    const char *v = std::getenv("NICOFF_DEBUG");
    if (!v || !*v)
        return 0;
    char *end;
    const long n = std::strtol(v, &end, 10);
    if (*end != '\0')
        return 1;
    return n < 0 ? 0 : n > 9 ? 9 : static_cast<int>(n);
}

} // namespace

int debug_level() noexcept {
    static const int level = read_level(); // thread-safe initialisation
    return level;
}

void debug_log(const char *fmt, ...) noexcept {
    char line[512];
    int n = std::snprintf(line, sizeof(line), "nicoff[%d]: ", static_cast<int>(::getpid()));
    va_list ap;
    va_start(ap, fmt);
    const int m = std::vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
    va_end(ap);
    n = m < 0 ? n : std::min<int>(n + m, sizeof(line) - 2);
    line[n++] = '\n';
    // One write(2), so that lines of several threads do not interleave.
    [[maybe_unused]] const ssize_t w = ::write(STDERR_FILENO, line, n);
}

} // namespace nicoff::detail
