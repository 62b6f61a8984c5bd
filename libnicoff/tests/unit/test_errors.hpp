// Test helper: the errno a call throws, and its message.
#ifndef NICOFF_TESTS_TEST_ERRORS_HPP
#define NICOFF_TESTS_TEST_ERRORS_HPP

#include <functional>
#include <string>
#include <system_error>

namespace nicoff::test {

// The errno value of the std::system_error f() throws; 0 if it returns.
// what, if given, gets the error's message.
inline int error_of(const std::function<void()> &f, std::string *what = nullptr) {
    try {
        f();
    } catch (const std::system_error &e) {
        if (what)
            *what = e.what();
        return e.code().value();
    }
    return 0;
}

} // namespace nicoff::test

#endif // NICOFF_TESTS_TEST_ERRORS_HPP
