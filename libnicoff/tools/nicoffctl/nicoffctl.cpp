// nicoffctl: talks to the nicoff module over its generic netlink family.
// Arguments are parsed before netlink is opened, so --help, --version and
// usage errors work without the module.  Show commands print JSON (-j) made
// with nlohmann-json, keys in the order of the lists they come from, so that
// scripts can diff two runs.
#include <nicoff/nicoff_abi.h>

#include <getopt.h>
#include <linux/netlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>

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
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#ifndef NICOFF_VERSION_STRING
#error "the build passes -DNICOFF_VERSION_STRING"
#endif

namespace {

using Json = nlohmann::ordered_json;

constexpr const char *usage_text =
    "usage: nicoffctl [-j [-p]] info | card N | cards | stats | get-stat CARD NAME | faults\n"
    "       nicoffctl faults [--card N] [--global] [drop=PPM] [dup=PPM] [corrupt=PPM]\n"
    "                        [reorder=PPM] [delay=PPM] [delay_us=US]\n"
    "       nicoffctl set-card N bcast_hw=0|1\n"
    "       nicoffctl -h | --help | -V | --version\n";

constexpr const char *help_text =
    "\n"
    "  info                module-wide state and the global faults\n"
    "  card N | cards      one card's (every card's) counters, ports, faults, settings\n"
    "  stats               every card's counters\n"
    "  get-stat CARD NAME  one counter, as a bare number\n"
    "  faults              the faults in force: global, and each card's own\n"
    "  faults [--card N] KEY=VALUE...  set faults (CAP_NET_ADMIN)\n"
    "  faults --card N --global        the card follows the global faults again\n"
    "  set-card N bcast_hw=0|1         card N broadcasts by the switch's multicast (1)\n"
    "                                  or the point-to-point tree (0) (CAP_NET_ADMIN)\n"
    "\n"
    "  -j, --json          print JSON (show commands)\n"
    "  -p, --pretty        indent the JSON\n"
    "  -h, --help          this text\n"
    "  -V, --version       the nicoff version\n"
    "\n"
    "Exit status: 0 success, 1 the kernel refused (its message is printed) or the\n"
    "module is not loaded, 2 usage error.\n";

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

// The fault keys of the command line, in the order they are shown.
constexpr std::array<std::pair<std::string_view, int>, 6> fault_keys = {{
    {"drop", NICOFF_NL_FAULT_DROP_PPM},
    {"dup", NICOFF_NL_FAULT_DUP_PPM},
    {"corrupt", NICOFF_NL_FAULT_CORRUPT_PPM},
    {"reorder", NICOFF_NL_FAULT_REORDER_PPM},
    {"delay", NICOFF_NL_FAULT_DELAY_PPM},
    {"delay_us", NICOFF_NL_FAULT_DELAY_USECS},
}};

// A card's settings on the command line (set-card KEY=VALUE), in the order shown.
constexpr std::array<std::pair<std::string_view, int>, 1> card_keys = {{
    {"bcast_hw", NICOFF_NL_A_BCAST_HW},
}};

using keys_t = std::span<const std::pair<std::string_view, int>>;

std::optional<int> key_attr(std::string_view key, keys_t keys) {
    for (const auto &[name, attr] : keys)
        if (name == key)
            return attr;
    return std::nullopt;
}

// What one reply message said.
struct Reply {
    std::optional<std::uint32_t> card, num_cards, abi, ports_open, bcast_hw;
    std::optional<std::uint64_t> pinned;
    std::map<int, std::uint64_t> stats;
    std::map<int, std::uint32_t> faults;
    bool faults_global = false;
};

using SockPtr = std::unique_ptr<nl_sock, decltype(&nl_socket_free)>;
using MsgPtr = std::unique_ptr<nl_msg, decltype(&nlmsg_free)>;

// The name of the attribute at byte offset `offs` of the request `req` (as
// the kernel's NLMSGERR_ATTR_OFFS counts, from the netlink header), or "".
std::string attr_at(nlmsghdr *req, std::uint32_t offs) {
    const auto *base = reinterpret_cast<const char *>(req);
    const auto at = [&](const nlattr *a) {
        return static_cast<std::uint32_t>(reinterpret_cast<const char *>(a) - base);
    };
    nlattr *a;
    int rem;
    nla_for_each_attr(a, genlmsg_attrdata(static_cast<genlmsghdr *>(nlmsg_data(req)), 0),
                      genlmsg_attrlen(static_cast<genlmsghdr *>(nlmsg_data(req)), 0), rem) {
        if (at(a) == offs) {
            for (const auto &[name, attr] : card_keys)
                if (attr == nla_type(a))
                    return std::string(name);
            return nla_type(a) == NICOFF_NL_A_CARD ? "card" : "faults";
        }
        if (nla_type(a) != NICOFF_NL_A_FAULTS || offs < at(a) ||
            offs >= at(a) + nla_len(a) + NLA_HDRLEN)
            continue;
        nlattr *f;
        int frem;
        nla_for_each_nested(f, a, frem) {
            if (at(f) != offs)
                continue;
            if (nla_type(f) == NICOFF_NL_FAULT_GLOBAL)
                return "global";
            for (const auto &[name, attr] : fault_keys)
                if (attr == nla_type(f))
                    return std::string(name);
        }
    }
    return "";
}

// The kernel's extended ack (NETLINK_EXT_ACK), after the nlmsgerr of an
// error message: its text, the attribute it points at, and the valid range
// when a policy rejected a value.
std::string extack_text(const nlmsgerr *err, nlmsghdr *req) {
    const auto *hdr =
        reinterpret_cast<const nlmsghdr *>(reinterpret_cast<const char *>(err) - NLMSG_HDRLEN);
    std::string what = std::strerror(-err->error);
    if (!(hdr->nlmsg_flags & NLM_F_ACK_TLVS))
        return what;
    // The TLVs follow the request echoed back, unless the kernel capped it
    // to its header.
    std::size_t off = NLMSG_HDRLEN + sizeof(*err);
    if (!(hdr->nlmsg_flags & NLM_F_CAPPED))
        off += err->msg.nlmsg_len - NLMSG_HDRLEN;
    if (off >= hdr->nlmsg_len)
        return what;
    nlattr *tb[NLMSGERR_ATTR_MAX + 1];
    auto *tlvs =
        reinterpret_cast<nlattr *>(const_cast<char *>(reinterpret_cast<const char *>(hdr)) + off);
    if (nla_parse(tb, NLMSGERR_ATTR_MAX, tlvs, static_cast<int>(hdr->nlmsg_len - off), nullptr) < 0)
        return what;
    if (tb[NLMSGERR_ATTR_MSG])
        what = nla_get_string(tb[NLMSGERR_ATTR_MSG]);
    if (tb[NLMSGERR_ATTR_OFFS] && req) {
        if (std::string name = attr_at(req, nla_get_u32(tb[NLMSGERR_ATTR_OFFS])); !name.empty())
            what += " (" + name + ")";
    }
    if (tb[NLMSGERR_ATTR_POLICY]) {
        nlattr *pol[NL_POLICY_TYPE_ATTR_MAX + 1];
        if (nla_parse_nested(pol, NL_POLICY_TYPE_ATTR_MAX, tb[NLMSGERR_ATTR_POLICY], nullptr) ==
            0) {
            if (pol[NL_POLICY_TYPE_ATTR_MIN_VALUE_U] && pol[NL_POLICY_TYPE_ATTR_MAX_VALUE_U])
                what += ": valid range " +
                        std::to_string(nla_get_u64(pol[NL_POLICY_TYPE_ATTR_MIN_VALUE_U])) + ".." +
                        std::to_string(nla_get_u64(pol[NL_POLICY_TYPE_ATTR_MAX_VALUE_U]));
            else if (pol[NL_POLICY_TYPE_ATTR_MIN_VALUE_S] && pol[NL_POLICY_TYPE_ATTR_MAX_VALUE_S])
                what += ": valid range " +
                        std::to_string(static_cast<std::int64_t>(
                            nla_get_u64(pol[NL_POLICY_TYPE_ATTR_MIN_VALUE_S]))) +
                        ".." +
                        std::to_string(static_cast<std::int64_t>(
                            nla_get_u64(pol[NL_POLICY_TYPE_ATTR_MAX_VALUE_S])));
        }
    }
    return what;
}

class Family {
public:
    Family() : sock_(nl_socket_alloc(), &nl_socket_free) {
        if (!sock_)
            throw std::runtime_error("out of memory");
        if (int e = genl_connect(sock_.get()); e < 0)
            throw KernelError(std::string("netlink: ") + nl_geterror(e));
        // Ask for the kernel's messages (NL_SET_ERR_MSG) in its errors.
        const int one = 1;
        setsockopt(nl_socket_get_fd(sock_.get()), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
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
        Pending p;
        p.req = nlmsg_hdr(msg.get());
        // libnl asks for an ACK on every request: read until the ACK (or the
        // end of a dump) or an error arrives.
        std::unique_ptr<nl_cb, decltype(&nl_cb_put)> cb(nl_cb_alloc(NL_CB_DEFAULT), &nl_cb_put);
        nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, &Family::on_msg, &p.replies);
        nl_cb_set(cb.get(), NL_CB_ACK, NL_CB_CUSTOM, &Family::on_done, &p);
        nl_cb_set(cb.get(), NL_CB_FINISH, NL_CB_CUSTOM, &Family::on_done, &p);
        nl_cb_err(cb.get(), NL_CB_CUSTOM, &Family::on_error, &p);
        if (int e = nl_send_auto(sock_.get(), msg.get()); e < 0)
            throw KernelError(std::string("send: ") + nl_geterror(e));
        while (p.status > 0)
            if (int e = nl_recvmsgs(sock_.get(), cb.get()); e < 0 && p.status > 0)
                throw KernelError(nl_geterror(e));
        if (p.status < 0)
            throw KernelError(p.error);
        return std::move(p.replies);
    }

private:
    struct Pending {
        nlmsghdr *req = nullptr;
        int status = 1;
        std::string error;
        std::vector<Reply> replies;
    };

    static int on_done(nl_msg *, void *arg) {
        static_cast<Pending *>(arg)->status = 0;
        return NL_STOP;
    }

    static int on_error(sockaddr_nl *, nlmsgerr *err, void *arg) {
        auto *p = static_cast<Pending *>(arg);
        p->status = err->error ? err->error : -EIO;
        p->error = err->error ? extack_text(err, p->req) : std::strerror(EIO);
        return NL_STOP;
    }

    static int on_msg(nl_msg *msg, void *arg) {
        auto *out = static_cast<std::vector<Reply> *>(arg);
        nlattr *tb[NICOFF_NL_A_MAX + 1];
        if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, NICOFF_NL_A_MAX, nullptr) < 0)
            return NL_SKIP;
        Reply r;
        // An attribute the reply lacks leaves its field empty.
        auto u32 = [&](int attr, std::optional<std::uint32_t> &field) {
            if (tb[attr])
                field = nla_get_u32(tb[attr]);
        };
        u32(NICOFF_NL_A_CARD, r.card);
        u32(NICOFF_NL_A_NUM_CARDS, r.num_cards);
        u32(NICOFF_NL_A_ABI_VERSION, r.abi);
        u32(NICOFF_NL_A_PORTS_OPEN, r.ports_open);
        u32(NICOFF_NL_A_BCAST_HW, r.bcast_hw);
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

// One command line, parsed before anything talks to the kernel.
struct Options {
    bool json = false, pretty = false, global = false;
    std::optional<std::uint32_t> card;  // faults --card
    std::vector<std::string_view> args; // the command and its operands
};

Json faults_json(const Reply &r) {
    Json j = Json::object();
    for (const auto &[name, attr] : fault_keys)
        if (auto it = r.faults.find(attr); it != r.faults.end())
            j[std::string(name)] = it->second;
    return j;
}

Json stats_json(const Reply &r) {
    Json j = Json::object();
    for (const auto &[attr, v] : r.stats)
        j[stat_names[attr]] = v;
    return j;
}

Json card_json(const Reply &r) {
    return Json{{"card", r.card.value_or(0)}, {"ports_open", r.ports_open.value_or(0)},
                {"stats", stats_json(r)},     {"faults_global", r.faults_global},
                {"faults", faults_json(r)},   {"bcast_hw", r.bcast_hw.value_or(0)}};
}

std::string faults_text(const Reply &r) {
    std::string s;
    for (const auto &[name, attr] : fault_keys)
        if (auto it = r.faults.find(attr); it != r.faults.end())
            s += " " + std::string(name) + "=" + std::to_string(it->second);
    return s;
}

void print_card(const Reply &r, bool with_ports) {
    if (with_ports)
        std::printf("card %u: %u ports open\n", r.card.value_or(0), r.ports_open.value_or(0));
    else
        std::printf("card %u:\n", r.card.value_or(0));
    for (const auto &[attr, v] : r.stats)
        std::printf("  %-16s %llu\n", stat_names[attr], static_cast<unsigned long long>(v));
    if (with_ports) {
        std::printf("  faults%s:%s\n", r.faults_global ? " (global)" : " (this card's own)",
                    faults_text(r).c_str());
        std::printf("  bcast_hw %u\n", r.bcast_hw.value_or(0));
    }
}

auto put_card(std::uint32_t card) {
    return [card](nl_msg *m) {
        nla_put_u32(m, NICOFF_NL_A_CARD, card);
    };
}

void no_fill(nl_msg *) {}

Options parse(int argc, char **argv) {
    static const option longopts[] = {
        {"json", no_argument, nullptr, 'j'},
        {"pretty", no_argument, nullptr, 'p'},
        {"help", no_argument, nullptr, 'h'},
        {"version", no_argument, nullptr, 'V'},
        {"card", required_argument, nullptr, 'c'},
        {"global", no_argument, nullptr, 'g'},
        {nullptr, 0, nullptr, 0},
    };
    Options o;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "jphV", longopts, nullptr)) != -1) {
        switch (c) {
        case 'j':
            o.json = true;
            break;
        case 'p':
            o.pretty = true;
            break;
        case 'h':
            std::printf("%s%s", usage_text, help_text);
            std::exit(0);
        case 'V':
            std::printf("nicoffctl %s\n", NICOFF_VERSION_STRING);
            std::exit(0);
        case 'c':
            o.card = parse_u32(optarg, "card");
            break;
        case 'g':
            o.global = true;
            break;
        default:
            throw UsageError(std::string("bad option: ") + argv[optind - 1]);
        }
    }
    for (int i = optind; i < argc; i++)
        o.args.emplace_back(argv[i]);
    if (o.args.empty())
        throw UsageError("a command is required");
    const std::string_view cmd = o.args[0];
    const std::size_t n = o.args.size();
    const bool ok = ((cmd == "info" || cmd == "cards" || cmd == "stats") && n == 1) ||
                    (cmd == "card" && n == 2) || (cmd == "get-stat" && n == 3) ||
                    (cmd == "set-card" && n >= 2) || cmd == "faults";
    if (!ok)
        throw UsageError("unknown command or wrong arguments: " + std::string(cmd));
    if ((o.card || o.global) && cmd != "faults")
        throw UsageError("--card and --global go with faults");
    if (o.global && !o.card)
        throw UsageError("--global needs --card");
    if (cmd == "card" || cmd == "get-stat" || cmd == "set-card")
        o.card = parse_u32(o.args[1], "card");
    return o;
}

// The counter named `name`'s attribute.
int stat_attr(std::string_view name) {
    for (int attr = NICOFF_NL_STAT_PAD + 1; attr <= NICOFF_NL_STAT_MAX; attr++)
        if (name == stat_names[attr])
            return attr;
    throw UsageError("unknown counter: " + std::string(name));
}

int run(const Options &o) {
    const std::string_view cmd = o.args[0];
    const int get_attr = cmd == "get-stat" ? stat_attr(o.args[2]) : 0;
    std::vector<std::pair<int, std::uint32_t>> set;
    if (cmd == "faults" || cmd == "set-card") {
        const bool faults = cmd == "faults";
        for (std::size_t i = faults ? 1 : 2; i < o.args.size(); i++) {
            const std::string_view a = o.args[i];
            const auto eq = a.find('=');
            const auto attr =
                eq == std::string_view::npos
                    ? std::nullopt
                    : key_attr(a.substr(0, eq), faults ? keys_t(fault_keys) : keys_t(card_keys));
            if (!attr)
                throw UsageError(std::string(faults ? "unknown fault: " : "unknown setting: ") +
                                 std::string(a));
            set.emplace_back(*attr, parse_u32(a.substr(eq + 1), "value"));
        }
    }

    Family fam;
    Json out;
    if (cmd == "info") {
        const auto r = fam.request(NICOFF_NL_CMD_GET_INFO, 0, no_fill).at(0);
        out = Json{{"cards", r.num_cards.value_or(0)},
                   {"abi", r.abi.value_or(0)},
                   {"pinned_pages", r.pinned.value_or(0)},
                   {"faults", faults_json(r)}};
        if (!o.json)
            std::printf("nicoff: %u cards, ABI %u, %llu pages pinned\n  faults (global):%s\n",
                        r.num_cards.value_or(0), r.abi.value_or(0),
                        static_cast<unsigned long long>(r.pinned.value_or(0)),
                        faults_text(r).c_str());
    } else if (cmd == "card") {
        const auto r = fam.request(NICOFF_NL_CMD_GET_CARD, 0, put_card(*o.card)).at(0);
        out = card_json(r);
        if (!o.json)
            print_card(r, true);
    } else if (cmd == "cards" || cmd == "stats") {
        out = Json::array();
        for (const Reply &r : fam.request(NICOFF_NL_CMD_GET_CARD, NLM_F_DUMP, no_fill)) {
            out.push_back(cmd == "cards"
                              ? card_json(r)
                              : Json{{"card", r.card.value_or(0)}, {"stats", stats_json(r)}});
            if (!o.json)
                print_card(r, cmd == "cards");
        }
    } else if (cmd == "get-stat") {
        const auto r = fam.request(NICOFF_NL_CMD_GET_CARD, 0, put_card(*o.card)).at(0);
        const auto it = r.stats.find(get_attr);
        if (it == r.stats.end())
            throw KernelError("the module does not report " + std::string(o.args[2]));
        out = Json{{"card", *o.card}, {stat_names[get_attr], it->second}};
        if (!o.json)
            std::printf("%llu\n", static_cast<unsigned long long>(it->second));
    } else if (cmd == "set-card") {
        fam.request(NICOFF_NL_CMD_SET_CARD, 0, [&](nl_msg *m) {
            nla_put_u32(m, NICOFF_NL_A_CARD, *o.card);
            for (auto [attr, v] : set)
                nla_put_u32(m, attr, v);
        });
        return 0;
    } else if (set.empty() && !o.card) {
        // faults: show the global ones and every card's own.
        const auto info = fam.request(NICOFF_NL_CMD_GET_INFO, 0, no_fill).at(0);
        out = Json{{"global", faults_json(info)}, {"cards", Json::array()}};
        if (!o.json)
            std::printf("global:%s\n", faults_text(info).c_str());
        for (const Reply &r : fam.request(NICOFF_NL_CMD_GET_CARD, NLM_F_DUMP, no_fill)) {
            if (r.faults_global)
                continue;
            out["cards"].push_back(Json{{"card", r.card.value_or(0)}, {"faults", faults_json(r)}});
            if (!o.json)
                std::printf("card %u:%s\n", r.card.value_or(0), faults_text(r).c_str());
        }
    } else {
        fam.request(NICOFF_NL_CMD_SET_FAULTS, 0, [&](nl_msg *m) {
            if (o.card)
                nla_put_u32(m, NICOFF_NL_A_CARD, *o.card);
            nlattr *nest = nla_nest_start(m, NICOFF_NL_A_FAULTS);
            if (o.global)
                nla_put_flag(m, NICOFF_NL_FAULT_GLOBAL);
            for (auto [attr, v] : set)
                nla_put_u32(m, attr, v);
            nla_nest_end(m, nest);
        });
        return 0;
    }
    if (o.json)
        std::printf("%s\n", out.dump(o.pretty ? 4 : -1).c_str());
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    try {
        return run(parse(argc, argv));
    } catch (const UsageError &e) {
        std::fprintf(stderr, "nicoffctl: %s\n%s", e.what(), usage_text);
        return 2;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "nicoffctl: %s\n", e.what());
        return 1;
    }
}
