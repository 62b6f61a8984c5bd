// SPDX-License-Identifier: GPL-2.0
/*
 * libnicoff's strided methods (nicoff::StridedEngine: nic, naive, hbna,
 * auto) between a port on card 0 and memory on card 1 that a port there
 * exposes by rkey and a StridedTarget serves for HBNA.  C++ (the library's
 * API), TAP through kselftest.h.
 *
 * random/METHOD       seeded random shapes of 0 to 8 levels, puts and gets
 *                     in turn: both whole arrays end exactly as the
 *                     reference copy leaves them
 * hbna_ctc            the same with HBNA one piece at a time (copy,
 *                     transmit, copy) in 16 KiB pieces
 * hbna_contended      32 non-blocking puts of 1 KiB pieces through 4
 *                     target buffers: every tag completes once, every byte
 *                     lands, the target spent CPU time unpacking
 * acc                 int32 and int64 accumulates by nic, naive and hbna
 *                     and a double one by auto, as the reference computes
 * faults              random/naive, hbna and auto under 10% drop, 5%
 *                     duplicate, 5% reorder, 1% corrupt: every byte once
 * acc_faults          random int32 and int64 accumulates (scale 3 or -2)
 *                     by hbna and by naive under the same faults, against
 *                     the reference: a piece added twice would show
 * acc_double          random double accumulates by hbna (the target's
 *                     thread), bit for bit as the reference adds them in
 *                     the same order; auto runs them by hbna; then hbna
 *                     under the faults
 * auto_cache          the model is measured once, cached under
 *                     XDG_CACHE_HOME, and a second engine reads it back
 * auto_refresh        calibrate() rewrites the cache file, a corrupted
 *                     file is measured again and replaced, and
 *                     NICOFF_STRIDED_CALIBRATE=1 measures over a sound one
 * bad_input           hbna without a target, a local side outside its
 *                     region, 9 levels: refused at once; a remote side
 *                     outside the target's memory: an error, no byte written
 * capi                the C API (nicoff.h): a 3-level put, its get back
 *                     and an int64 accumulate by each method, completions
 *                     by tag through wait and poll, auto resolved, and
 *                     its refusals
 * capi_card           the card's own C calls: nicoff_put_strided,
 *                     _get_strided, _acc_strided (int64), _put_vector and
 *                     _get_vector (lists of three nicoff_giov) on random
 *                     shapes and lists, both arrays byte for byte
 */
#include <nicoff/nicoff.h>
#include <nicoff/strided.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include "../libnicoff/tests/unit/test_errors.hpp"
#include "kselftest.h"
#include "nicoff_strided_ref.h"

extern "C" {
#include "nicoff_util.h"
}

namespace {

using nicoff::StridedMethod;
using nicoff::StridedSide;
using nicoff::test::error_of;

constexpr std::size_t big = 1 << 20;

// The running test and round, for the watchdog's message.
const char *volatile current = "";
volatile int current_round = 0;

// A test that hangs fails alone, with where it was, instead of the runner's
// timeout taking the whole file's output.
void watchdog(int) {
    char msg[160];
    const int n =
        std::snprintf(msg, sizeof(msg), "not ok - %s: stuck in round %d\n", current, current_round);
    (void)!write(STDOUT_FILENO, msg, n > 0 ? static_cast<std::size_t>(n) : 0);
    _exit(KSFT_FAIL);
}

struct Bed {
    explicit Bed(nicoff::StridedOptions opts = {}, nicoff::StridedTarget::Options topts = {})
        : a(0, nicoff::PortConfig{NICOFF_PORT_ANY, 256, 256}),
          b(1, nicoff::PortConfig{NICOFF_PORT_ANY, 64, 64}), src(big), dst(big),
          src_mr(a, std::span(src), NICOFF_ACCESS_LOCAL_WRITE),
          dst_mr(b, std::span(dst), NICOFF_ACCESS_ALL), target(1, std::span(dst), topts),
          engine(a, opts) {
        peer = {{b.card(), b.number(), dst_mr.rkey()}, target.address()};
    }
    nicoff::Port a, b;
    std::vector<std::byte> src, dst;
    nicoff::MemoryRegion src_mr, dst_mr;
    nicoff::StridedTarget target;
    nicoff::StridedEngine engine;
    nicoff::StridedPeer peer;

    std::uint8_t *s() { return reinterpret_cast<std::uint8_t *>(src.data()); }
    std::uint8_t *d() { return reinterpret_cast<std::uint8_t *>(dst.data()); }
};

void fill(std::vector<std::byte> &v, __u64 *seed) {
    for (std::byte &x : v)
        x = static_cast<std::byte>(sref_rand(seed));
}

// A random shape: max_chunks bounds naive's commands.
struct Shape {
    nicoff_strided_desc d{};
    __u32 levels = 0;
    std::vector<std::uint64_t> count, ls, rs;
    std::uint64_t loff = 0, roff = 0;

    Shape(__u64 *seed, std::uint64_t max_chunks, std::uint64_t max_len = 0x20000) {
        do
            levels = sref_random_shape(&d, max_len, 0x60000, seed);
        while (sref_len(&d, levels) / d.count[0] > max_chunks);
        count.assign(d.count, d.count + levels + 1);
        ls.assign(d.local_stride, d.local_stride + levels);
        rs.assign(d.remote_stride, d.remote_stride + levels);
        loff = sref_rand(seed) % (big - 0x60000);
        roff = sref_rand(seed) % (big - 0x60000);
    }
};

// One put or get of sh by m, and the reference's copy of it into want_s
// and want_d.
void move(Bed &bed, StridedMethod m, const Shape &sh, bool put, std::vector<std::uint8_t> &want_s,
          std::vector<std::uint8_t> &want_d) {
    if (put) {
        sref_copy(&sh.d, sh.levels, want_s.data(), sh.loff, sh.d.local_stride, want_d.data(),
                  sh.roff, sh.d.remote_stride);
        bed.engine.put(m, bed.src_mr, StridedSide{sh.loff, sh.ls}, bed.peer,
                       StridedSide{sh.roff, sh.rs}, sh.count);
    } else {
        sref_copy(&sh.d, sh.levels, want_d.data(), sh.roff, sh.d.remote_stride, want_s.data(),
                  sh.loff, sh.d.local_stride);
        bed.engine.get(m, bed.peer, StridedSide{sh.roff, sh.rs}, bed.src_mr,
                       StridedSide{sh.loff, sh.ls}, sh.count);
    }
}

// rounds random puts and gets by m; false (after a diagnostic) on a difference.
bool random_rounds(Bed &bed, StridedMethod m, int rounds, __u64 seed) {
    std::vector<std::uint8_t> want_s(big), want_d(big);
    const std::uint64_t max_chunks = m == StridedMethod::naive ? 2048 : ~0ull;
    for (int r = 0; r < rounds; r++) {
        current_round = r;
        fill(bed.src, &seed);
        fill(bed.dst, &seed);
        const Shape sh(&seed, max_chunks);
        std::memcpy(want_s.data(), bed.s(), big);
        std::memcpy(want_d.data(), bed.d(), big);
        const bool put = r % 2 == 0;
        // Which operation failed, when one throws.
        const auto where = [&] {
            ksft_print_msg("%s %s round %d: %u levels, chunk %llu\n",
                           std::string(nicoff::method_name(m)).c_str(), put ? "put" : "get", r,
                           sh.levels, static_cast<unsigned long long>(sh.count[0]));
        };
        try {
            move(bed, m, sh, put, want_s, want_d);
        } catch (const std::exception &) {
            where();
            throw;
        }
        if (std::memcmp(want_s.data(), bed.s(), big) || std::memcmp(want_d.data(), bed.d(), big)) {
            where();
            ksft_print_msg("the arrays differ\n");
            return false;
        }
    }
    return true;
}

bool test_random(StridedMethod m) {
    Bed bed;
    return random_rounds(bed, m, 24, 0x5eed + static_cast<__u64>(m));
}

bool test_hbna_ctc() {
    Bed bed({.hbna_piece = 16384, .hbna_pipelined = false});
    return random_rounds(bed, StridedMethod::hbna, 8, 77);
}

bool test_hbna_contended() {
    Bed bed({.hbna_slots = 16, .hbna_piece = 1024}, {.buffers = 4, .buffer_bytes = 1024});
    __u64 seed = 5;
    fill(bed.src, &seed);
    std::fill(bed.dst.begin(), bed.dst.end(), std::byte{0});
    constexpr int ops = 32;
    // Each op's rows in a 32 KiB window of its own on the target.
    const std::uint64_t count[] = {1000, 16}, stride[] = {2000};
    for (int i = 0; i < ops; i++)
        bed.engine.start_put(StridedMethod::hbna, bed.src_mr, StridedSide{i * 512ull, stride},
                             bed.peer, StridedSide{i * 32768ull, stride}, count, 100 + i);
    std::vector<int> seen(ops);
    for (int i = 0; i < ops; i++) {
        const nicoff::StridedDone d = bed.engine.wait_any();
        if (d.tag < 100 || d.tag >= 100 + ops || d.status || d.bytes != 16000 ||
            d.method != StridedMethod::hbna) {
            ksft_print_msg("completion tag %llu status %d bytes %llu\n",
                           static_cast<unsigned long long>(d.tag), d.status,
                           static_cast<unsigned long long>(d.bytes));
            return false;
        }
        seen[d.tag - 100]++;
    }
    if (std::count(seen.begin(), seen.end(), 1) != ops || bed.engine.in_flight())
        return false;
    for (int i = 0; i < ops; i++)
        for (int row = 0; row < 16; row++)
            if (std::memcmp(bed.d() + i * 32768 + row * 2000, bed.s() + i * 512 + row * 2000,
                            1000)) {
                ksft_print_msg("op %d row %d differs\n", i, row);
                return false;
            }
    const nicoff::StridedTarget::Stats st = bed.target.stats();
    ksft_print_msg("target: %llu pieces, %llu bytes, %llu us unpacking\n",
                   static_cast<unsigned long long>(st.pieces),
                   static_cast<unsigned long long>(st.bytes),
                   static_cast<unsigned long long>(st.unpack_cpu_ns / 1000));
    return st.bytes == ops * 16000ull && st.pieces >= ops * 16 && st.unpack_cpu_ns > 0;
}

// Doubles of a few significant bits and various exponents: sums round.
void fill_doubles(std::vector<std::byte> &v, __u64 *seed) {
    for (std::size_t i = 0; i + 8 <= v.size(); i += 8) {
        const double x =
            static_cast<double>(static_cast<std::int64_t>(sref_rand(seed)) - (1 << 30)) /
            static_cast<double>(1 + sref_rand(seed) % 1000);
        std::memcpy(v.data() + i, &x, 8);
    }
}

// rounds random accumulates of acc elements (scale 3 or -2) by m, each
// against the reference (sref_acc: the same additions in the same order,
// so doubles too are bit for bit); false (after a diagnostic) on a
// difference, or if the method that ran is not m (auto: want_auto, or any).
bool acc_rounds(Bed &bed, StridedMethod m, std::uint32_t acc, int rounds, __u64 *seed,
                StridedMethod want_auto = StridedMethod::automatic) {
    std::vector<std::uint8_t> want(big);
    const std::uint64_t w = acc == NICOFF_ACC_INT32 ? 4 : 8;
    for (int r = 0; r < rounds; r++) {
        current_round = r;
        if (acc == NICOFF_ACC_DOUBLE) {
            fill_doubles(bed.src, seed);
            fill_doubles(bed.dst, seed);
        } else {
            fill(bed.src, seed);
            fill(bed.dst, seed);
        }
        Shape sh(seed, 512, 0x8000);
        sh.count[0] = sh.d.count[0] = std::max<std::uint64_t>(w, sh.count[0] / w * w);
        if (sref_extent(&sh.d, sh.levels, sh.d.local_stride) > 0x60000 ||
            sref_extent(&sh.d, sh.levels, sh.d.remote_stride) > 0x60000) {
            r--;
            continue;
        }
        const std::int64_t scale = sref_rand(seed) % 2 ? 3 : -2;
        sh.d.acc = acc;
        sh.d.scale = scale;
        std::memcpy(want.data(), bed.d(), big);
        sref_acc(&sh.d, sh.levels, bed.s(), sh.loff, sh.d.local_stride, want.data(), sh.roff,
                 sh.d.remote_stride);
        bed.engine.start_acc(m, acc, scale, bed.src_mr, StridedSide{sh.loff, sh.ls}, bed.peer,
                             StridedSide{sh.roff, sh.rs}, sh.count, 500 + r);
        const nicoff::StridedDone d = bed.engine.wait_any();
        const StridedMethod ran = m == StridedMethod::automatic ? want_auto : m;
        if (d.tag != 500u + r || d.status || d.bytes != sref_len(&sh.d, sh.levels) ||
            d.method == StridedMethod::automatic ||
            (ran != StridedMethod::automatic && d.method != ran) ||
            std::memcmp(want.data(), bed.d(), big)) {
            ksft_print_msg("acc %u by %s (ran %s) round %d: %u levels, chunk %llu: status %d, "
                           "%s\n",
                           acc, std::string(nicoff::method_name(m)).c_str(),
                           std::string(nicoff::method_name(d.method)).c_str(), r, sh.levels,
                           static_cast<unsigned long long>(sh.count[0]), d.status,
                           std::memcmp(want.data(), bed.d(), big) ? "differs" : "same");
            return false;
        }
    }
    return true;
}

bool test_acc() {
    Bed bed;
    __u64 seed = 11;
    if (!acc_rounds(bed, StridedMethod::nic, NICOFF_ACC_INT32, 6, &seed) ||
        !acc_rounds(bed, StridedMethod::naive, NICOFF_ACC_INT64, 6, &seed) ||
        !acc_rounds(bed, StridedMethod::hbna, NICOFF_ACC_INT32, 6, &seed) ||
        !acc_rounds(bed, StridedMethod::hbna, NICOFF_ACC_INT64, 6, &seed))
        return false;
    // Doubles: 2.5 + 3 * 0.5 at every element of the block, by the target's thread.
    std::vector<double> one(64, 0.5), acc(64, 2.5);
    std::memcpy(bed.src.data(), one.data(), 512);
    std::memcpy(bed.dst.data(), acc.data(), 512);
    const std::uint64_t count[] = {64, 8}, stride[] = {0};
    bed.engine.acc(StridedMethod::automatic, NICOFF_ACC_DOUBLE, 3, bed.src_mr,
                   StridedSide{0, stride}, bed.peer, StridedSide{0, stride}, count);
    std::memcpy(acc.data(), bed.dst.data(), 512);
    // Eight blocks onto the same 64 bytes: each of their 8 doubles got 8 * 1.5.
    for (int i = 0; i < 8; i++)
        if (acc[i] != 2.5 + 8 * 1.5)
            return false;
    return acc[8] == 2.5;
}

bool test_faults() {
    if (nt_set_faults(100000, 50000, 50000, 10000))
        return false;
    bool ok = true;
    {
        Bed bed({.hbna_piece = 8192});
        ok = random_rounds(bed, StridedMethod::naive, 6, 31) &&
             random_rounds(bed, StridedMethod::hbna, 12, 32) &&
             random_rounds(bed, StridedMethod::automatic, 6, 33);
    }
    return nt_set_faults(0, 0, 0, 0) == 0 && ok;
}

// Integer accumulates by hbna and naive under faults: a piece unpacked or
// added twice would add twice, one lost would not add.  hbna in 1 KiB
// pieces, so that most operations are several.
bool test_acc_faults() {
    if (nt_set_faults(100000, 50000, 50000, 10000))
        return false;
    bool ok = true;
    {
        Bed bed({.hbna_piece = 1024});
        __u64 seed = 41;
        for (const StridedMethod m : {StridedMethod::hbna, StridedMethod::naive})
            for (const std::uint32_t acc : {NICOFF_ACC_INT32, NICOFF_ACC_INT64})
                ok = ok && acc_rounds(bed, m, acc, 4, &seed);
    }
    return nt_set_faults(0, 0, 0, 0) == 0 && ok;
}

// Random double accumulates in the target's thread by hbna, auto sending
// them there too, then hbna under faults; 1 KiB pieces.
bool test_acc_double() {
    bool ok;
    {
        Bed bed({.hbna_piece = 1024});
        __u64 seed = 51;
        ok = acc_rounds(bed, StridedMethod::hbna, NICOFF_ACC_DOUBLE, 10, &seed) &&
             acc_rounds(bed, StridedMethod::automatic, NICOFF_ACC_DOUBLE, 4, &seed,
                        StridedMethod::hbna);
        if (!ok || nt_set_faults(100000, 50000, 50000, 10000))
            return false;
        ok = acc_rounds(bed, StridedMethod::hbna, NICOFF_ACC_DOUBLE, 4, &seed);
    }
    return nt_set_faults(0, 0, 0, 0) == 0 && ok;
}

// Card 0's cache file's text, and the model it holds if it holds one.
std::string cache_text() {
    std::ifstream f(nicoff::strided_cache_path(0));
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::optional<nicoff::StridedModel> cached_model() {
    return nicoff::StridedModel::from_text(cache_text());
}

void write_cache(const std::string &text) {
    std::filesystem::create_directories(nicoff::strided_cache_path(0).parent_path());
    std::ofstream(nicoff::strided_cache_path(0)) << text;
}

bool test_auto_cache() {
    char dir[] = "/tmp/nicoff-methods-XXXXXX";
    if (!mkdtemp(dir))
        return false;
    setenv("XDG_CACHE_HOME", dir, 1);
    unsetenv("NICOFF_STRIDED_CALIBRATE");
    nicoff::StridedModel first;
    {
        Bed bed;
        first = bed.engine.model();
    }
    const std::string text = cache_text();
    const auto cached = nicoff::StridedModel::from_text(text);
    ksft_print_msg("card 0's model: %s", text.c_str());
    Bed again;
    const nicoff::StridedModel &second = again.engine.model();
    const std::uint64_t rows[] = {8, 2048}, wide[] = {1 << 16, 4};
    ksft_print_msg("auto picks %s for 2048 chunks of 8 B, %s for 4 of 64 KiB\n",
                   std::string(nicoff::method_name(again.engine.resolve(StridedMethod::automatic,
                                                                        rows, again.peer)))
                       .c_str(),
                   std::string(nicoff::method_name(again.engine.resolve(StridedMethod::automatic,
                                                                        wide, again.peer)))
                       .c_str());
    std::filesystem::remove_all(dir);
    unsetenv("XDG_CACHE_HOME");
    return cached && cached->tn > 0 && cached->tn == first.tn && second.tn == first.tn &&
           second.ts_hbna == first.ts_hbna && second.tm == first.tm;
}

// The cache refreshed: calibrate() rewrites it, a corrupted one is
// measured again and replaced, NICOFF_STRIDED_CALIBRATE=1 measures over a
// sound one.  A model no card has (tn of 3 s a byte) marks a stale file.
bool test_auto_refresh() {
    char dir[] = "/tmp/nicoff-refresh-XXXXXX";
    const char *was = std::getenv("XDG_CACHE_HOME");
    const std::string saved = was ? was : "";
    if (!mkdtemp(dir))
        return false;
    setenv("XDG_CACHE_HOME", dir, 1);
    unsetenv("NICOFF_STRIDED_CALIBRATE");
    const nicoff::StridedModel stale{.ts_nic = 1, .ts_put = 2, .tn = 3, .ts_hbna = 4, .tm = 5};
    // Each step's verdict, its measured tn and what the file then holds.
    const auto fresh = [](const char *what, double tn) {
        const auto m = cached_model();
        if (m && tn > 0 && tn < 1 && m->tn == tn)
            return true;
        ksft_print_msg("%s: measured tn %g, the file holds %s", what, tn,
                       m ? m->to_text().c_str() : "no model\n");
        return false;
    };
    bool ok;
    {
        write_cache(stale.to_text());
        Bed bed;
        // Read, not measured: the checks below tell a rewrite from none.
        ok = bed.engine.model().tn == 3 && fresh("calibrate()", bed.engine.calibrate().tn) &&
             bed.engine.model().tn != 3;
    }
    if (ok) {
        write_cache("tn banana\n");
        Bed bed;
        ok = fresh("a corrupted cache", bed.engine.model().tn);
    }
    if (ok) {
        write_cache(stale.to_text());
        setenv("NICOFF_STRIDED_CALIBRATE", "1", 1);
        Bed bed;
        ok = fresh("NICOFF_STRIDED_CALIBRATE=1", bed.engine.model().tn);
        unsetenv("NICOFF_STRIDED_CALIBRATE");
    }
    std::filesystem::remove_all(dir);
    if (was)
        setenv("XDG_CACHE_HOME", saved.c_str(), 1);
    else
        unsetenv("XDG_CACHE_HOME");
    return ok;
}

bool test_bad_input() {
    Bed bed;
    const std::uint64_t count[] = {100, 4}, stride[] = {200};
    nicoff::StridedPeer no_target = bed.peer;
    no_target.hbna = {};
    if (error_of([&] {
            bed.engine.put(StridedMethod::hbna, bed.src_mr, {0, stride}, no_target, {0, stride},
                           count);
        }) != EINVAL)
        return false;
    if (error_of([&] {
            bed.engine.put(StridedMethod::naive, bed.src_mr, {big - 500, stride}, bed.peer,
                           {0, stride}, count);
        }) != ERANGE)
        return false;
    const std::uint64_t nine[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, zeros[9] = {};
    if (error_of([&] {
            bed.engine.put(StridedMethod::nic, bed.src_mr, {0, zeros}, bed.peer, {0, zeros}, nine);
        }) != EINVAL)
        return false;
    std::fill(bed.dst.begin(), bed.dst.end(), std::byte{0x5a});
    const int e = error_of([&] {
        bed.engine.put(StridedMethod::hbna, bed.src_mr, {0, stride}, bed.peer, {big - 500, stride},
                       count);
    });
    if (e != ERANGE)
        return false;
    // The engine and the target go on.
    return std::all_of(bed.dst.begin(), bed.dst.end(),
                       [](std::byte x) { return x == std::byte{0x5a}; }) &&
           random_rounds(bed, StridedMethod::hbna, 2, 3);
}

struct Test {
    const char *name;
    bool (*fn)();
};

} // namespace

// The C API's objects for test_capi, freed in reverse.
struct CBed {
    static constexpr std::size_t words = 8192;
    nicoff_device *da = nullptr, *db = nullptr;
    nicoff_port *a = nullptr, *b = nullptr;
    std::vector<std::int64_t> src = std::vector<std::int64_t>(words),
                              dst = std::vector<std::int64_t>(words);
    nicoff_mr *src_mr = nullptr, *dst_mr = nullptr;
    nicoff_strided_target *target = nullptr;
    nicoff_strided_engine *engine = nullptr;
    nicoff_strided_peer peer{};

    ~CBed() {
        nicoff_strided_engine_destroy(engine);
        nicoff_strided_target_destroy(target);
        if (src_mr)
            nicoff_mr_dereg(src_mr);
        if (dst_mr)
            nicoff_mr_dereg(dst_mr);
        nicoff_port_destroy(a);
        nicoff_port_destroy(b);
        nicoff_device_close(da);
        nicoff_device_close(db);
    }

    // 0, or the first call's error.
    int open() {
        int r;
        if ((r = nicoff_device_open(0, &da)) || (r = nicoff_device_open(1, &db)) ||
            (r = nicoff_port_create(da, nullptr, &a)) ||
            (r = nicoff_port_create(db, nullptr, &b)) ||
            (r = nicoff_mr_reg(a, src.data(), words * 8, NICOFF_ACCESS_LOCAL_WRITE, &src_mr)) ||
            (r = nicoff_mr_reg(b, dst.data(), words * 8, NICOFF_ACCESS_ALL, &dst_mr)) ||
            (r = nicoff_strided_target_create(1, dst.data(), words * 8, 0, 0, &target)) ||
            (r = nicoff_strided_engine_create(a, &engine)))
            return r;
        peer.card = 1;
        peer.port = static_cast<std::uint32_t>(nicoff_port_number(b));
        peer.rkey = nicoff_mr_rkey(dst_mr);
        return nicoff_strided_target_address(target, &peer.hbna);
    }
};

// The shape of test_capi, in int64 words: 3 words a chunk, 5 chunks a
// row, 4 rows, each side's strides its own.
constexpr std::uint64_t capi_count[] = {3 * 8, 5, 4};
constexpr std::uint64_t capi_lstride[] = {16 * 8, 100 * 8}, capi_rstride[] = {20 * 8, 200 * 8};
constexpr std::uint64_t capi_loff = 7, capi_roff = 11; // words

// Calls fn(local word, remote word) for each word of the shape.
template <class F>
void capi_walk(F fn) {
    for (std::uint64_t k = 0; k < capi_count[2]; k++)
        for (std::uint64_t j = 0; j < capi_count[1]; j++)
            for (std::uint64_t i = 0; i < capi_count[0] / 8; i++)
                fn(capi_loff + (k * capi_lstride[1] + j * capi_lstride[0]) / 8 + i,
                   capi_roff + (k * capi_rstride[1] + j * capi_rstride[0]) / 8 + i);
}

// Waits for the operation tagged tag through wait (or poll): it succeeded,
// moved the shape's 480 bytes, and ran m (auto: one of the others).
bool capi_done(nicoff_strided_engine *e, std::uint64_t tag, int m, bool by_poll) {
    nicoff_strided_done d{};
    if (by_poll) {
        int n = 0;
        for (int i = 0; i < 30000 && n == 0; i++) {
            n = nicoff_strided_poll(e, &d, 1);
            if (n == 0)
                usleep(1000);
        }
        if (n != 1) {
            ksft_print_msg("poll: %d\n", n);
            return false;
        }
    } else if (const int r = nicoff_strided_wait(e, &d, 30000); r) {
        ksft_print_msg("wait: %d\n", r);
        return false;
    }
    const bool method_ok = m == NICOFF_STRIDED_AUTO ? d.method != NICOFF_STRIDED_AUTO
                                                    : d.method == static_cast<std::uint32_t>(m);
    if (d.tag != tag || d.status || d.bytes != 480 || !method_ok) {
        ksft_print_msg("tag %llu (want %llu) status %d bytes %llu method %u\n",
                       static_cast<unsigned long long>(d.tag), static_cast<unsigned long long>(tag),
                       d.status, static_cast<unsigned long long>(d.bytes), d.method);
        return false;
    }
    return true;
}

bool test_capi() {
    CBed bed;
    if (const int r = bed.open(); r) {
        ksft_print_msg("setup: %d\n", r);
        return false;
    }
    for (int m = NICOFF_STRIDED_NIC; m <= NICOFF_STRIDED_AUTO; m++) {
        current_round = m;
        const char *name = nicoff_strided_method_name(m);
        const std::uint64_t tag = 100 * static_cast<std::uint64_t>(m);
        for (std::size_t i = 0; i < CBed::words; i++)
            bed.src[i] = static_cast<std::int64_t>(i * 1000 + static_cast<std::size_t>(m));
        std::fill(bed.dst.begin(), bed.dst.end(), 0);
        std::vector<std::int64_t> want(CBed::words, 0);
        capi_walk([&](std::uint64_t l, std::uint64_t r) { want[r] = bed.src[l]; });
        if (nicoff_strided_start_put(bed.engine, m, bed.src_mr, capi_loff * 8, capi_lstride,
                                     capi_roff * 8, capi_rstride, capi_count, 2, &bed.peer,
                                     tag + 1) ||
            !capi_done(bed.engine, tag + 1, m, false) || bed.dst != want) {
            ksft_print_msg("%s: put\n", name);
            return false;
        }
        // The words back into a cleared source: the shape's, and no other.
        const std::vector<std::int64_t> sent = bed.src;
        std::fill(bed.src.begin(), bed.src.end(), 0);
        std::vector<std::int64_t> back(CBed::words, 0);
        capi_walk([&](std::uint64_t l, std::uint64_t) { back[l] = sent[l]; });
        if (nicoff_strided_start_get(bed.engine, m, capi_roff * 8, capi_rstride, bed.src_mr,
                                     capi_loff * 8, capi_lstride, capi_count, 2, &bed.peer,
                                     tag + 2) ||
            !capi_done(bed.engine, tag + 2, m, true) || bed.src != back) {
            ksft_print_msg("%s: get\n", name);
            return false;
        }
        // dst += 3 * src on the shape: four times what the put left.
        capi_walk([&](std::uint64_t, std::uint64_t r) { want[r] *= 4; });
        if (nicoff_strided_start_acc(bed.engine, m, NICOFF_ACC_INT64, 3, bed.src_mr, capi_loff * 8,
                                     capi_lstride, capi_roff * 8, capi_rstride, capi_count, 2,
                                     &bed.peer, tag + 3) ||
            !capi_done(bed.engine, tag + 3, m, false) || bed.dst != want) {
            ksft_print_msg("%s: acc\n", name);
            return false;
        }
    }
    nicoff_strided_target_stats st{};
    const int resolved =
        nicoff_strided_resolve(bed.engine, NICOFF_STRIDED_AUTO, capi_count, 2, &bed.peer);
    if (nicoff_strided_target_get_stats(bed.target, &st) || st.pieces < 3 || !st.unpack_cpu_ns ||
        resolved < NICOFF_STRIDED_NIC || resolved > NICOFF_STRIDED_NAIVE) {
        ksft_print_msg("target stats: %llu pieces; auto resolved to %d\n",
                       static_cast<unsigned long long>(st.pieces), resolved);
        return false;
    }

    // Refusals, nothing started: the engine has nothing in flight after them.
    nicoff_strided_peer bad = bed.peer;
    bad.reserved = 1;
    nicoff_strided_peer no_target = bed.peer;
    no_target.hbna = {};
    const std::uint64_t nine[10] = {8, 1, 1, 1, 1, 1, 1, 1, 1, 1}, strides[9] = {};
    const struct {
        const char *what;
        int got, want;
    } refusals[] = {
        {"unknown method",
         nicoff_strided_start_put(bed.engine, 4, bed.src_mr, 0, capi_lstride, 0, capi_rstride,
                                  capi_count, 2, &bed.peer, 1),
         -EINVAL},
        {"no peer",
         nicoff_strided_start_put(bed.engine, NICOFF_STRIDED_NIC, bed.src_mr, 0, capi_lstride, 0,
                                  capi_rstride, capi_count, 2, nullptr, 1),
         -EINVAL},
        {"reserved peer field",
         nicoff_strided_start_get(bed.engine, NICOFF_STRIDED_NIC, 0, capi_rstride, bed.src_mr, 0,
                                  capi_lstride, capi_count, 2, &bad, 1),
         -EINVAL},
        {"9 levels",
         nicoff_strided_start_put(bed.engine, NICOFF_STRIDED_NIC, bed.src_mr, 0, strides, 0,
                                  strides, nine, 9, &bed.peer, 1),
         -EINVAL},
        {"local side outside its region",
         nicoff_strided_start_put(bed.engine, NICOFF_STRIDED_NIC, bed.src_mr, CBed::words * 8 - 8,
                                  capi_lstride, 0, capi_rstride, capi_count, 2, &bed.peer, 1),
         -ERANGE},
        {"hbna without a target",
         nicoff_strided_start_put(bed.engine, NICOFF_STRIDED_HBNA, bed.src_mr, 0, capi_lstride, 0,
                                  capi_rstride, capi_count, 2, &no_target, 1),
         -EINVAL},
        {"double acc on the card",
         nicoff_strided_start_acc(bed.engine, NICOFF_STRIDED_NIC, 99, 1, bed.src_mr, 0,
                                  capi_lstride, 0, capi_rstride, capi_count, 2, &bed.peer, 1),
         -EINVAL},
        {"poll into nothing", nicoff_strided_poll(bed.engine, nullptr, 1), -EINVAL},
        {"nothing to wait for", nicoff_strided_wait(bed.engine, nullptr, 0), -EINVAL},
    };
    bool ok = true;
    for (const auto &r : refusals)
        if (r.got != r.want) {
            ksft_print_msg("%s: %d, not %d\n", r.what, r.got, r.want);
            ok = false;
        }
    nicoff_strided_done d{};
    if (nicoff_strided_poll(bed.engine, &d, 1) != 0 || nicoff_strided_method_name(4) ||
        std::string_view(nicoff_strided_method_name(NICOFF_STRIDED_AUTO)) != "auto") {
        ksft_print_msg("a refused operation completed, or the names are wrong\n");
        ok = false;
    }
    return ok;
}

// The completion of tag on port p: it succeeded and moved bytes.
bool card_done(nicoff_port *p, std::uint64_t tag, std::uint64_t bytes) {
    nicoff_cqe q{};
    int n = 0;
    for (int i = 0; i < 300 && n == 0; i++)
        if ((n = nicoff_poll(p, &q, 1)) == 0)
            nicoff_wait(p, 100);
    if (n != 1 || q.tag != tag || q.status || q.result != bytes) {
        ksft_print_msg("completion %d: tag %llu (want %llu) status %d bytes %llu (want %llu)\n", n,
                       static_cast<unsigned long long>(q.tag), static_cast<unsigned long long>(tag),
                       q.status, static_cast<unsigned long long>(q.result),
                       static_cast<unsigned long long>(bytes));
        return false;
    }
    return true;
}

// Random vector lists in ARMCI's form: three nicoff_giov of 1 to 5
// segments of one length each (15 at most: a command takes 16), offsets
// inside [0, span); seg the same list flattened for vref_copy (in the
// order the C API moves it).
struct Giovs {
    std::vector<std::uint64_t> src[3], dst[3];
    nicoff_giov g[3]{};
    nicoff_vector_seg seg[NICOFF_VECTOR_MAX_SEGS]{};
    __u32 n = 0;

    Giovs(__u64 *seed, std::uint64_t span, bool put) {
        for (int i = 0; i < 3; i++) {
            const std::uint64_t bytes = 1 + sref_rand(seed) % (i == 2 ? 3000 : 200);
            const int k = 1 + static_cast<int>(sref_rand(seed) % 5);
            for (int j = 0; j < k; j++, n++) {
                seg[n] = {sref_rand(seed) % (span - bytes), sref_rand(seed) % (span - bytes),
                          bytes};
                src[i].push_back(put ? seg[n].local_off : seg[n].remote_off);
                dst[i].push_back(put ? seg[n].remote_off : seg[n].local_off);
            }
            g[i] = {src[i].data(), dst[i].data(), k, bytes};
        }
    }
};

// The card's own C calls (nicoff_put_strided, _get_strided, _acc_strided,
// _put_vector, _get_vector) on random shapes and lists, byte for byte.
bool test_capi_card() {
    CBed bed;
    nicoff_strided *raw = nullptr;
    int r = bed.open();
    if (!r)
        r = nicoff_strided_create(bed.a, &raw);
    if (r) {
        ksft_print_msg("setup: %d\n", r);
        return false;
    }
    const std::unique_ptr<nicoff_strided, void (*)(nicoff_strided *)> s(raw,
                                                                        nicoff_strided_destroy);
    constexpr std::uint64_t bytes = CBed::words * 8, span = 0x6000;
    auto *src = reinterpret_cast<std::uint8_t *>(bed.src.data());
    auto *dst = reinterpret_cast<std::uint8_t *>(bed.dst.data());
    std::vector<std::uint8_t> want(bytes);
    __u64 seed = 61;
    const auto refill = [&] {
        for (std::uint64_t i = 0; i < bytes; i++) {
            src[i] = static_cast<std::uint8_t>(sref_rand(&seed));
            dst[i] = static_cast<std::uint8_t>(sref_rand(&seed));
        }
    };
    std::uint64_t tag = 0;
    // One call on fresh arrays: ref() makes want of the destination (dst
    // or src) as it was, post(tag) posts the call, which must complete as
    // tag with n bytes and leave the destination as want.
    const auto step = [&](const char *what, bool to_dst, auto ref, auto post, std::uint64_t n) {
        refill();
        const std::uint8_t *to = to_dst ? dst : src;
        std::memcpy(want.data(), to, bytes);
        ref();
        const int posted = post(++tag);
        if (!posted && card_done(bed.a, tag, n) && !std::memcmp(to, want.data(), bytes))
            return true;
        ksft_print_msg("%s round %d: posted %d\n", what, current_round, posted);
        return false;
    };
    std::uint8_t *w = want.data();
    const std::uint32_t card = bed.peer.card, port = bed.peer.port, rkey = bed.peer.rkey;
    for (r = 0; r < 8; r++) {
        current_round = r;
        nicoff_strided_desc d{};
        const __u32 lv = sref_random_shape(&d, 0x4000, span, &seed);
        const int levels = static_cast<int>(lv);
        const std::uint64_t loff = sref_rand(&seed) % (bytes - span);
        const std::uint64_t roff = sref_rand(&seed) % (bytes - span);
        const __u64 *ls = d.local_stride, *rs = d.remote_stride;
        // The C API's (uint64_t) views of the shape (__u64, the reference's).
        const auto *uls = reinterpret_cast<const std::uint64_t *>(ls);
        const auto *urs = reinterpret_cast<const std::uint64_t *>(rs);
        const auto *cn = reinterpret_cast<const std::uint64_t *>(d.count);
        nicoff_mr *mr = bed.src_mr;
        if (!step(
                "put_strided", true, [&] { sref_copy(&d, lv, src, loff, ls, w, roff, rs); },
                [&](std::uint64_t t) {
                    return nicoff_put_strided(s.get(), mr, loff, uls, roff, urs, cn, levels, card,
                                              port, rkey, t);
                },
                sref_len(&d, lv)) ||
            !step(
                "get_strided", false, [&] { sref_copy(&d, lv, dst, roff, rs, w, loff, ls); },
                [&](std::uint64_t t) {
                    return nicoff_get_strided(s.get(), roff, urs, mr, loff, uls, cn, levels, card,
                                              port, rkey, t);
                },
                sref_len(&d, lv)))
            return false;
        // Whole int64 elements (strides kept), if the shape still fits.
        d.count[0] = std::max<std::uint64_t>(8, d.count[0] / 8 * 8);
        d.acc = NICOFF_ACC_INT64;
        d.scale = -2;
        if (sref_extent(&d, lv, ls) <= span && sref_extent(&d, lv, rs) <= span &&
            !step(
                "acc_strided", true, [&] { sref_acc(&d, lv, src, loff, ls, w, roff, rs); },
                [&](std::uint64_t t) {
                    return nicoff_acc_strided(s.get(), NICOFF_ACC_INT64, -2, mr, loff, uls, roff,
                                              urs, cn, levels, card, port, rkey, t);
                },
                sref_len(&d, lv)))
            return false;
        const Giovs put(&seed, bytes, true), get(&seed, bytes, false);
        if (!step(
                "put_vector", true, [&] { vref_copy(put.seg, put.n, true, src, 0, w, 0); },
                [&](std::uint64_t t) {
                    return nicoff_put_vector(s.get(), put.g, 3, mr, card, port, rkey, t);
                },
                vref_len(put.seg, put.n)) ||
            !step(
                "get_vector", false, [&] { vref_copy(get.seg, get.n, false, dst, 0, w, 0); },
                [&](std::uint64_t t) {
                    return nicoff_get_vector(s.get(), get.g, 3, mr, card, port, rkey, t);
                },
                vref_len(get.seg, get.n)))
            return false;
    }
    return true;
}

int main() {
    nicoff_query q{};
    const Test tests[] = {
        {"random/nic",
         [] {
             return test_random(StridedMethod::nic);
         }},
        {"random/naive",
         [] {
             return test_random(StridedMethod::naive);
         }},
        {"random/hbna",
         [] {
             return test_random(StridedMethod::hbna);
         }},
        {"random/auto",
         [] {
             return test_random(StridedMethod::automatic);
         }},
        {"hbna_ctc", test_hbna_ctc},
        {"hbna_contended", test_hbna_contended},
        {"acc", test_acc},
        {"faults", test_faults},
        {"acc_faults", test_acc_faults},
        {"acc_double", test_acc_double},
        {"auto_cache", test_auto_cache},
        {"auto_refresh", test_auto_refresh},
        {"bad_input", test_bad_input},
        {"capi", test_capi},
        {"capi_card", test_capi_card},
    };
    setvbuf(stdout, nullptr, _IOLBF, 0);
    signal(SIGALRM, watchdog);
    ksft_print_header();
    ksft_set_plan(sizeof(tests) / sizeof(tests[0]));
    if (nt_query_card(0, &q) || q.num_cards < 2)
        ksft_exit_skip("needs 2 cards\n");
    // auto's model in a scratch cache, measured once for the tests that use it.
    char dir[] = "/tmp/nicoff-methods-cache-XXXXXX";
    if (mkdtemp(dir))
        setenv("XDG_CACHE_HOME", dir, 1);
    for (const Test &t : tests) {
        bool ok = false;
        current = t.name;
        current_round = 0;
        alarm(240);
        try {
            ok = t.fn();
        } catch (const std::exception &e) {
            ksft_print_msg("%s: %s\n", t.name, e.what());
        }
        if (std::string_view(t.name) == "auto_cache")
            setenv("XDG_CACHE_HOME", dir, 1);
        ksft_test_result(ok, "%s\n", t.name);
    }
    std::filesystem::remove_all(dir);
    nt_set_faults(0, 0, 0, 0);
    ksft_finished();
}
