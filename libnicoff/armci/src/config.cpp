// libarmci-nicoff: NICOFF_ARMCI_STRIDED.
#include "config.hpp"

#include <array>
#include <cerrno>
#include <system_error>

namespace nicoff::armci {

namespace {

struct MethodInfo {
    std::string_view name;
    bool available; // this library runs it
};

// The library runs the NIC-based method only: nicoff::StridedEngine's
// others need a port of their own, and HBNA a StridedTarget per allocation
// at every process.  They are named so that the variable's values stay
// the same once they are used.
constexpr std::array<MethodInfo, static_cast<std::size_t>(Method::count)> methods = {{
    {"nic", true},
    {"naive", false},
    {"hbna", false},
    {"auto", false},
}};

// What runs when the variable is unset: auto once it is used.
constexpr Method default_method = Method::nic;

} // namespace

std::string_view method_name(Method m) noexcept {
    return methods[static_cast<std::size_t>(m)].name;
}

std::optional<Method> method_from_name(std::string_view name) noexcept {
    for (std::size_t i = 0; i < methods.size(); i++)
        if (methods[i].name == name)
            return static_cast<Method>(i);
    return std::nullopt;
}

bool method_available(Method m) noexcept { return methods[static_cast<std::size_t>(m)].available; }

Method strided_method(const char *value) {
    if (!value)
        return default_method;
    const auto m = method_from_name(value);
    if (!m)
        throw std::system_error(EINVAL, std::generic_category(),
                                std::string("NICOFF_ARMCI_STRIDED='") + value +
                                    "': expected nic, naive, hbna or auto");
    if (!method_available(*m))
        throw std::system_error(EINVAL, std::generic_category(),
                                std::string("NICOFF_ARMCI_STRIDED='") + value +
                                    "': libarmci-nicoff does not use that method yet (only nic)");
    return *m;
}

} // namespace nicoff::armci
