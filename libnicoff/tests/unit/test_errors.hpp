// Test helper: the errno a call throws.
#ifndef NICOFF_TESTS_TEST_ERRORS_HPP
#define NICOFF_TESTS_TEST_ERRORS_HPP

#include <functional>
#include <system_error>

namespace nicoff::test {

// The errno value of the std::system_error f() throws; 0 if it returns.
inline int error_of(const std::function<void()> &f) {
    try {
        f();
    } catch (const std::system_error &e) {
        return e.code().value();
    }
    return 0;
}

} // namespace nicoff::test

#endif // NICOFF_TESTS_TEST_ERRORS_HPP
