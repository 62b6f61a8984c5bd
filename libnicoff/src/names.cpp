// nicoff_strerror() and nicoff_opcode_name(): names for logs.
#include <nicoff/nicoff.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string_view>

namespace {

// Indexed by opcode, from the ABI's one list; completion-only opcodes too.
constexpr auto opcode_names = [] {
    std::array<const char *, 256> names{};
#define NICOFF_OPCODE(op, name) names[NICOFF_OP_##op] = #name;
#define NICOFF_OPCODE_CQE(op, name) names[NICOFF_OP_##op] = #name;
#include <nicoff/nicoff_lists.h>
#undef NICOFF_OPCODE
#undef NICOFF_OPCODE_CQE
    return names;
}();

// What the card means by the statuses its completions carry (abi.md);
// other errno values get the C library's description.
struct StatusText {
    int err;
    const char *text;
};
constexpr StatusText status_texts[] = {
    {ECONNREFUSED, "no port open at the destination"},
    {ETIMEDOUT, "no answer from the peer within the retry budget"},
    {ENOBUFS, "receiver not ready for the whole retry budget"},
    {EMSGSIZE, "message longer than the buffer or the card allows"},
    {ENOENT, "no such region, remote key or group"},
    {EACCES, "region lacks the access right"},
    {ERANGE, "outside the region"},
    {EOPNOTSUPP, "opcode not supported"},
    {ECONNRESET, "a group member failed or went away"},
    {ECANCELED, "canceled: the group was destroyed"},
    {EPROTO, "port in the error state"},
};

} // namespace

extern "C" {

const char *nicoff_opcode_name(uint8_t opcode) {
    const char *name = opcode_names[opcode];
    return name ? name : "unknown";
}

const char *nicoff_strerror(int status) {
    if (status == 0)
        return "success";
    if (status > 0 || status == INT_MIN) // -INT_MIN does not exist
        return "unknown status";
    for (const StatusText &s : status_texts)
        if (s.err == -status)
            return s.text;
    const char *text = strerrordesc_np(-status);
    return text ? text : "unknown status";
}

} // extern "C"
