// nicoff-bench: command line.  Exit status: 0 success, 1 a suite failed,
// 2 usage error (unknown suite or option, bad value).
#include "bench.hpp"

#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <system_error>

namespace {

using namespace nicoff::bench;

void usage(std::FILE *to) {
    std::fprintf(to, "usage: nicoff-bench <suite> [--json FILE] [--card N] [options]\n"
                     "       nicoff-bench --help | --version\n\nsuites:\n");
    for (const auto &s : suites()) {
        std::fprintf(to, "  %-12s %s\n", s.name.c_str(), s.description.c_str());
        for (const auto &o : s.options)
            std::fprintf(to, "      --%-16s %s (default %s)\n", o.name.c_str(), o.help.c_str(),
                         o.default_value.c_str());
    }
    std::fprintf(to, "\noptions of every suite:\n");
    for (const auto &o : global_options())
        std::fprintf(to, "  --%-20s %s%s%s\n", o.name.c_str(), o.help.c_str(),
                     o.default_value.empty() ? "" : " (default ",
                     o.default_value.empty() ? "" : (o.default_value + ")").c_str());
}

[[noreturn]] void usage_error(const std::string &msg) {
    std::fprintf(stderr, "nicoff-bench: %s\n", msg.c_str());
    std::fprintf(stderr, "Try 'nicoff-bench --help'.\n");
    std::exit(2);
}

const Suite *find_suite(std::string_view name) {
    for (const auto &s : suites())
        if (s.name == name)
            return &s;
    return nullptr;
}

bool write_file(const std::string &path, const std::string &text) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << text;
    f.close();
    return static_cast<bool>(f);
}

} // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const std::string_view first = argv[1];
    if (first == "--help" || first == "-h" || first == "help") {
        usage(stdout);
        return 0;
    }
    if (first == "--version" || first == "-V") {
        std::printf("nicoff-bench %s\n", NICOFF_VERSION_STRING);
        return 0;
    }
    const Suite *suite = find_suite(first);
    if (!suite) {
        std::string known;
        for (const auto &s : suites())
            known += (known.empty() ? "" : ", ") + s.name;
        usage_error("unknown suite '" + std::string(first) + "' (known: " + known + ")");
    }

    std::vector<OptionSpec> specs = global_options();
    specs.insert(specs.end(), suite->options.begin(), suite->options.end());
    std::map<std::string, std::string> given;
    for (int i = 2; i < argc; i++) {
        std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            usage(stdout);
            return 0;
        }
        if (arg.rfind("--", 0) != 0)
            usage_error("unexpected argument '" + arg + "'");
        std::string name = arg.substr(2), value;
        if (auto eq = name.find('='); eq != std::string::npos) {
            value = name.substr(eq + 1);
            name.resize(eq);
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            usage_error("option --" + name + " needs a value");
        }
        bool known = false;
        for (const auto &s : specs)
            known |= s.name == name;
        if (!known)
            usage_error("suite " + suite->name + " has no option --" + name);
        given[name] = value;
    }

    Context ctx(suite->name, Options(specs, given));
    int rc = 0;
    try {
        // Validate the numeric options before a long run starts.
        for (const auto &s : specs)
            if (s.name != "json" && !s.default_value.empty() &&
                s.default_value.find_first_not_of("0123456789.") == std::string::npos)
                (void)ctx.opts().number(s.name);
    } catch (const std::invalid_argument &e) {
        usage_error(e.what());
    }
    try {
        suite->run(ctx);
    } catch (const std::invalid_argument &e) {
        usage_error(e.what());
    } catch (const std::system_error &e) {
        std::fprintf(stderr, "nicoff-bench: %s: %s\n", suite->name.c_str(), e.what());
        rc = 1;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "nicoff-bench: %s: %s\n", suite->name.c_str(), e.what());
        rc = 1;
    }

    std::fputs(format_table(ctx.records()).c_str(), stdout);
    std::fflush(stdout);
    if (const std::string &json = ctx.opts().str("json"); !json.empty()) {
        if (!write_file(json, format_json(ctx.records()))) {
            std::fprintf(stderr, "nicoff-bench: cannot write %s: %s\n", json.c_str(),
                         std::strerror(errno));
            rc = 1;
        }
    }
    return rc;
}
