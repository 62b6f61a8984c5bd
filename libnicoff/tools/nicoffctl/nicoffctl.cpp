// nicoffctl: talks to the nicoff module over its generic netlink family.
//
//   nicoffctl info                      module-wide state and global faults
//   nicoffctl card N | cards            one card's counters and faults, or every card's
//   nicoffctl faults [--card N] [drop=PPM] [dup=PPM] [corrupt=PPM] [reorder=PPM]
//                    [delay=PPM] [delay_us=US]    change faults (CAP_NET_ADMIN)
//   nicoffctl faults --card N --global  the card follows the global faults again
//   nicoffctl get-stat CARD NAME        one counter, as a bare number (for scripts)
//
// Exit status: 0 success, 1 the kernel refused (its message is printed), 2 usage.
#include <nicoff/nicoff_abi.h>

#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct KernelError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Every counter's name by attribute, from the one list in the ABI header.
constexpr std::array<const char *, NICOFF_NL_STAT_MAX + 1> stat_names = [] {
    std::array<const char *, NICOFF_NL_STAT_MAX + 1> n{};
#define NICOFF_NL_STAT_FW(attr, name) n[NICOFF_NL_STAT_##attr] = #name;
#define NICOFF_NL_STAT_HOST(attr, name) n[NICOFF_NL_STAT_##attr] = #name;
#include <nicoff/nicoff_lists.h>
#undef NICOFF_NL_STAT_FW
#undef NICOFF_NL_STAT_HOST
    return n;
}();

const std::map<std::string_view, int> fault_keys = {
    {"drop", NICOFF_NL_FAULT_DROP_PPM},       {"dup", NICOFF_NL_FAULT_DUP_PPM},
    {"corrupt", NICOFF_NL_FAULT_CORRUPT_PPM}, {"reorder", NICOFF_NL_FAULT_REORDER_PPM},
    {"delay", NICOFF_NL_FAULT_DELAY_PPM},     {"delay_us", NICOFF_NL_FAULT_DELAY_USECS},
};

// What one reply message said.
struct Reply {
    std::optional<std::uint32_t> card, num_cards, abi, ports_open;
    std::optional<std::uint64_t> pinned;
    std::map<int, std::uint64_t> stats;
    std::map<int, std::uint32_t> faults;
    bool faults_global = false;
};

using SockPtr = std::unique_ptr<nl_sock, decltype(&nl_socket_free)>;
using MsgPtr = std::unique_ptr<nl_msg, decltype(&nlmsg_free)>;

class Family {
public:
    Family() : sock_(nl_socket_alloc(), &nl_socket_free) {
        if (!sock_)
            throw std::runtime_error("out of memory");
        if (int e = genl_connect(sock_.get()); e < 0)
            throw KernelError(std::string("netlink: ") + nl_geterror(e));
        id_ = genl_ctrl_resolve(sock_.get(), NICOFF_GENL_NAME);
        if (id_ < 0)
            throw KernelError("netlink family \"nicoff\" not found: is the module loaded?");
    }

    // Sends one request and collects every reply message (one, or a dump).
    std::vector<Reply> request(std::uint8_t cmd, int flags,
                               const std::function<void(nl_msg *)> &fill) {
        MsgPtr msg(nlmsg_alloc(), &nlmsg_free);
        if (!msg || !genlmsg_put(msg.get(), NL_AUTO_PORT, NL_AUTO_SEQ, id_, 0, flags, cmd,
                                 NICOFF_GENL_VERSION))
            throw std::runtime_error("cannot build netlink message");
        fill(msg.get());
        std::vector<Reply> replies;
        // libnl asks for an ACK on every request: read until the ACK (or the
        // end of a dump) or an error arrives.
        int status = 1;
        std::unique_ptr<nl_cb, decltype(&nl_cb_put)> cb(nl_cb_alloc(NL_CB_DEFAULT), &nl_cb_put);
        nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, &Family::on_msg, &replies);
        nl_cb_set(cb.get(), NL_CB_ACK, NL_CB_CUSTOM, &Family::on_done, &status);
        nl_cb_set(cb.get(), NL_CB_FINISH, NL_CB_CUSTOM, &Family::on_done, &status);
        nl_cb_err(cb.get(), NL_CB_CUSTOM, &Family::on_error, &status);
        if (int e = nl_send_auto(sock_.get(), msg.get()); e < 0)
            throw KernelError(std::string("send: ") + nl_geterror(e));
        while (status > 0)
            if (int e = nl_recvmsgs(sock_.get(), cb.get()); e < 0 && status > 0)
                throw KernelError(nl_geterror(e));
        if (status < 0)
            throw KernelError(std::strerror(-status));
        return replies;
    }

private:
    static int on_done(nl_msg *, void *arg) {
        *static_cast<int *>(arg) = 0;
        return NL_STOP;
    }

    static int on_error(sockaddr_nl *, nlmsgerr *err, void *arg) {
        *static_cast<int *>(arg) = err->error ? err->error : -EIO;
        return NL_STOP;
    }

    static int on_msg(nl_msg *msg, void *arg) {
        auto *out = static_cast<std::vector<Reply> *>(arg);
        nlattr *tb[NICOFF_NL_A_MAX + 1];
        if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, NICOFF_NL_A_MAX, nullptr) < 0)
            return NL_SKIP;
        Reply r;
        if (tb[NICOFF_NL_A_CARD])
            r.card = nla_get_u32(tb[NICOFF_NL_A_CARD]);
        if (tb[NICOFF_NL_A_NUM_CARDS])
            r.num_cards = nla_get_u32(tb[NICOFF_NL_A_NUM_CARDS]);
        if (tb[NICOFF_NL_A_ABI_VERSION])
            r.abi = nla_get_u32(tb[NICOFF_NL_A_ABI_VERSION]);
        if (tb[NICOFF_NL_A_PORTS_OPEN])
            r.ports_open = nla_get_u32(tb[NICOFF_NL_A_PORTS_OPEN]);
        if (tb[NICOFF_NL_A_PINNED_PAGES])
            r.pinned = nla_get_u64(tb[NICOFF_NL_A_PINNED_PAGES]);
        if (tb[NICOFF_NL_A_STATS]) {
            nlattr *a;
            int rem;
            nla_for_each_nested(a, tb[NICOFF_NL_A_STATS], rem) {
                if (nla_type(a) > NICOFF_NL_STAT_PAD && nla_type(a) <= NICOFF_NL_STAT_MAX)
                    r.stats[nla_type(a)] = nla_get_u64(a);
            }
        }
        if (tb[NICOFF_NL_A_FAULTS]) {
            nlattr *a;
            int rem;
            nla_for_each_nested(a, tb[NICOFF_NL_A_FAULTS], rem) {
                if (nla_type(a) == NICOFF_NL_FAULT_GLOBAL)
                    r.faults_global = true;
                else if (nla_type(a) <= NICOFF_NL_FAULT_MAX)
                    r.faults[nla_type(a)] = nla_get_u32(a);
            }
        }
        out->push_back(std::move(r));
        return NL_OK;
    }

    SockPtr sock_;
    int id_ = -1;
};

std::uint32_t parse_u32(std::string_view s, const char *what) {
    char *end = nullptr;
    const std::string str(s);
    errno = 0;
    const unsigned long v = std::strtoul(str.c_str(), &end, 0);
    if (str.empty() || *end || errno || v > 0xffffffffUL || str[0] == '-')
        throw UsageError(std::string("bad ") + what + ": " + str);
    return static_cast<std::uint32_t>(v);
}

void print_faults(const Reply &r) {
    std::printf("  faults%s:", r.faults_global ? " (global)" : " (this card's own)");
    for (const auto &[name, attr] : fault_keys) {
        auto it = r.faults.find(attr);
        if (it != r.faults.end())
            std::printf(" %s=%u", std::string(name).c_str(), it->second);
    }
    std::printf("\n");
}

void print_card(const Reply &r) {
    std::printf("card %u: %u ports open\n", r.card.value_or(0), r.ports_open.value_or(0));
    for (const auto &[attr, v] : r.stats)
        std::printf("  %-16s %llu\n", stat_names[attr], static_cast<unsigned long long>(v));
    print_faults(r);
}

auto put_card(std::uint32_t card) {
    return [card](nl_msg *m) {
        nla_put_u32(m, NICOFF_NL_A_CARD, card);
    };
}

int run(int argc, char **argv) {
    if (argc < 2)
        throw UsageError("a command is required");
    const std::string_view cmd = argv[1];
    Family fam;
    if (cmd == "info" && argc == 2) {
        auto r = fam.request(NICOFF_NL_CMD_GET_INFO, 0, [](nl_msg *) {}).at(0);
        std::printf("nicoff: %u cards, ABI %u, %llu pages pinned\n", r.num_cards.value_or(0),
                    r.abi.value_or(0), static_cast<unsigned long long>(r.pinned.value_or(0)));
        print_faults(r);
        return 0;
    }
    if (cmd == "card" && argc == 3) {
        print_card(
            fam.request(NICOFF_NL_CMD_GET_CARD, 0, put_card(parse_u32(argv[2], "card"))).at(0));
        return 0;
    }
    if (cmd == "cards" && argc == 2) {
        for (const Reply &r : fam.request(NICOFF_NL_CMD_GET_CARD, NLM_F_DUMP, [](nl_msg *) {}))
            print_card(r);
        return 0;
    }
    if (cmd == "get-stat" && argc == 4) {
        const std::string_view name = argv[3];
        int attr = NICOFF_NL_STAT_PAD + 1;
        while (attr <= NICOFF_NL_STAT_MAX && name != stat_names[attr])
            attr++;
        if (attr > NICOFF_NL_STAT_MAX)
            throw UsageError("unknown counter: " + std::string(name));
        const auto r =
            fam.request(NICOFF_NL_CMD_GET_CARD, 0, put_card(parse_u32(argv[2], "card"))).at(0);
        const auto it = r.stats.find(attr);
        if (it == r.stats.end())
            throw KernelError("the module does not report " + std::string(name));
        std::printf("%llu\n", static_cast<unsigned long long>(it->second));
        return 0;
    }
    if (cmd == "faults") {
        std::optional<std::uint32_t> card;
        bool global = false;
        std::vector<std::pair<int, std::uint32_t>> set;
        for (int i = 2; i < argc; i++) {
            const std::string_view a = argv[i];
            if (a == "--card" && i + 1 < argc) {
                card = parse_u32(argv[++i], "card");
            } else if (a == "--global") {
                global = true;
            } else if (auto eq = a.find('='); eq != std::string_view::npos) {
                auto it = fault_keys.find(a.substr(0, eq));
                if (it == fault_keys.end())
                    throw UsageError("unknown fault: " + std::string(a.substr(0, eq)));
                set.emplace_back(it->second, parse_u32(a.substr(eq + 1), "value"));
            } else {
                throw UsageError("unexpected argument: " + std::string(a));
            }
        }
        if (global && !card)
            throw UsageError("--global needs --card");
        fam.request(NICOFF_NL_CMD_SET_FAULTS, 0, [&](nl_msg *m) {
            if (card)
                nla_put_u32(m, NICOFF_NL_A_CARD, *card);
            nlattr *nest = nla_nest_start(m, NICOFF_NL_A_FAULTS);
            if (global)
                nla_put_flag(m, NICOFF_NL_FAULT_GLOBAL);
            for (auto [attr, v] : set)
                nla_put_u32(m, attr, v);
            nla_nest_end(m, nest);
        });
        return 0;
    }
    throw UsageError("unknown command or wrong arguments: " + std::string(cmd));
}

} // namespace

int main(int argc, char **argv) {
    try {
        return run(argc, argv);
    } catch (const UsageError &e) {
        std::fprintf(stderr,
                     "nicoffctl: %s\n"
                     "usage: nicoffctl info | card N | cards | get-stat CARD NAME\n"
                     "       nicoffctl faults [--card N] [--global] [drop=PPM] [dup=PPM] "
                     "[corrupt=PPM] [reorder=PPM] [delay=PPM] [delay_us=US]\n",
                     e.what());
        return 2;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "nicoffctl: %s\n", e.what());
        return 1;
    }
}
