// cmocka from C++: its header wants these first and has no extern "C".
#ifndef NICOFF_TESTS_CMOCKA_HPP
#define NICOFF_TESTS_CMOCKA_HPP

#include <csetjmp>
#include <cstdarg>
#include <cstddef>
#include <cstdint>

extern "C" {
#include <cmocka.h>
}

#endif // NICOFF_TESTS_CMOCKA_HPP
