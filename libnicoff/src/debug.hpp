// NICOFF_DEBUG: what the library does, logged to stderr (as IBV_* and
// UCX_LOG_LEVEL do for their libraries).  Level 1: device and port opens
// and closes, ring attaches, memory registrations, errors; level 2 also
// the errors that are flow control (a full command ring).  Unset or 0:
// nothing, at the cost of one predictable branch, and never on the
// posting or polling fast paths.
#ifndef NICOFF_SRC_DEBUG_HPP
#define NICOFF_SRC_DEBUG_HPP

namespace nicoff::detail {

// NICOFF_DEBUG's level, read from the environment once per process.
int debug_level() noexcept;

inline bool debugging(int level) noexcept { return debug_level() >= level; }

// One line "nicoff[pid]: <message>" to stderr, written in one call.
void debug_log(const char *fmt, ...) noexcept __attribute__((format(printf, 1, 2)));

} // namespace nicoff::detail

#endif // NICOFF_SRC_DEBUG_HPP
