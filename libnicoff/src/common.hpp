// Internal helpers of libnicoff: errors, owned file descriptors, ioctls.
#ifndef NICOFF_SRC_COMMON_HPP
#define NICOFF_SRC_COMMON_HPP

#include "debug.hpp"

#include <nicoff/nicoff.hpp>

#include <cerrno>
#include <string>
#include <string_view>
#include <system_error>

#include <sys/ioctl.h>
#include <unistd.h>

namespace nicoff::detail {

// Every error the library raises passes here, so NICOFF_DEBUG logs them all.
[[noreturn]] inline void throw_errno(int err, const std::string &what) {
    if (debugging(err == EAGAIN ? 2 : 1)) {
        const std::string_view w = what;
        debug_log("%s: %s", w.starts_with("nicoff: ") ? what.c_str() + 8 : what.c_str(),
                  std::generic_category().message(err).c_str());
    }
    throw std::system_error(err, std::generic_category(), what);
}

// An open file, closed when the last owner lets go.
struct FileDesc {
    int fd = -1;
    explicit FileDesc(int f) noexcept : fd(f) {}
    FileDesc(const FileDesc &) = delete;
    FileDesc &operator=(const FileDesc &) = delete;
    ~FileDesc() {
        if (fd >= 0)
            ::close(fd);
    }
};

// ioctl() restarted on EINTR: 0 or an errno value.
template <class Arg>
int do_ioctl(int fd, unsigned long req, Arg arg) noexcept {
    for (;;) {
        if (::ioctl(fd, req, arg) == 0)
            return 0;
        if (errno != EINTR)
            return errno;
    }
}

// open() + QUERY + ABI check.  Returns the fd; throws on any failure.
int open_device(const std::string &path, DeviceInfo &info);

// The text of rest up to its first sep (all of it if none), which rest
// loses with the separator: one step of splitting a line or a record.
inline std::string_view take_field(std::string_view &rest, char sep) noexcept {
    const std::size_t at = rest.find(sep);
    const std::string_view field = rest.substr(0, at);
    rest = at == std::string_view::npos ? std::string_view{} : rest.substr(at + 1);
    return field;
}

} // namespace nicoff::detail

#endif // NICOFF_SRC_COMMON_HPP
