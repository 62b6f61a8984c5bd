// libarmci-nicoff: the environment it reads (Documentation/armci.md).
#ifndef NICOFF_ARMCI_CONFIG_HPP
#define NICOFF_ARMCI_CONFIG_HPP

#include <optional>
#include <string>
#include <string_view>

namespace nicoff::armci {

// How strided transfers run (NICOFF_ARMCI_STRIDED): seed 004's methods.
enum class Method { nic, naive, hbna, automatic, count };

// The method's name as the variable spells it.
std::string_view method_name(Method m) noexcept;
// The method a name stands for, or nullopt for an unknown name.
std::optional<Method> method_from_name(std::string_view name) noexcept;
// Whether this library runs the method yet.
bool method_available(Method m) noexcept;

// The method NICOFF_ARMCI_STRIDED asks for (value null: unset, the
// default); EINVAL naming the variable for an unknown or unavailable one.
Method strided_method(const char *value);

} // namespace nicoff::armci

#endif
