// What the C API's files share: the handles that wrap a C++ object more
// than one file uses, and the exception-to-errno boundary.
#ifndef NICOFF_SRC_CAPI_HPP
#define NICOFF_SRC_CAPI_HPP

#include <nicoff/nicoff.h>
#include <nicoff/nicoff.hpp>

#include <cerrno>
#include <memory>
#include <new>
#include <system_error>
#include <type_traits>
#include <utility>

struct nicoff_port {
    nicoff::Port port;
};

struct nicoff_mr {
    nicoff::MemoryRegion mr;
};

namespace nicoff::capi {

// Runs f, mapping every exception to a negative errno value; 0 once an f
// that returns nothing has run.
template <class F>
int guarded(F &&f) noexcept {
    try {
        if constexpr (std::is_void_v<std::invoke_result_t<F>>) {
            f();
            return 0;
        } else {
            return f();
        }
    } catch (const std::system_error &e) {
        const int v = e.code().value();
        return v > 0 ? -v : -EIO;
    } catch (const std::bad_alloc &) {
        return -ENOMEM;
    } catch (...) {
        return -EIO;
    }
}

// *out = a new T made of args; what the caller's C handle owns.
template <class T, class... Args>
int make_handle(T **out, Args &&...args) {
    *out = std::make_unique<T>(std::forward<Args>(args)...).release();
    return 0;
}

} // namespace nicoff::capi

#endif // NICOFF_SRC_CAPI_HPP
