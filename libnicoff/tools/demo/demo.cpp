// nicoff-demo: the main job of `make demo`.  It shows what the emulated card
// does today, with each figure measured in this run next to the host-side
// way of doing the same thing.  It grows with each engine of the card.
#include <nicoff/nicoff.hpp>
#include <nicoff/prep.h>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

nicoff_cqe wait_one(nicoff::Port &port) {
    nicoff_cqe c{};
    while (port.poll(std::span(&c, 1)) == 0)
        if (!port.wait(std::chrono::milliseconds(5000)))
            throw std::runtime_error("no completion within 5 s");
    return c;
}

void require(bool ok, const char *what) {
    if (!ok)
        throw std::runtime_error(what);
}

// The card copies between two registered regions; the host's memcpy is the
// baseline.  Both move the same bytes, and the card's result is verified.
void copy_demo(nicoff::Port &port) {
    constexpr std::size_t size = 4u << 20;
    std::vector<std::byte> src(size), dst(size), ref(size);
    for (std::size_t i = 0; i < size; i++)
        src[i] = static_cast<std::byte>((i * 131) ^ (i >> 9));
    auto src_mr = port.register_memory(src, 0);
    auto dst_mr = port.register_memory(dst, NICOFF_ACCESS_LOCAL_WRITE);

    constexpr int reps = 8;
    auto t0 = Clock::now();
    for (int r = 0; r < reps; r++) {
        port.copy(src_mr, 0, dst_mr, 0, size, r);
        nicoff_cqe c = wait_one(port);
        require(c.status == 0 && c.result == size, "card COPY failed");
    }
    const double card_us = us_since(t0) / reps;
    require(std::memcmp(src.data(), dst.data(), size) == 0, "card COPY moved wrong bytes");

    t0 = Clock::now();
    for (int r = 0; r < reps; r++) {
        std::memcpy(ref.data(), src.data(), size);
        asm volatile("" ::"r"(ref.data()) : "memory");
    }
    const double host_us = us_since(t0) / reps;
    std::printf("  %-34s %10.1f MB/s   host memcpy %10.1f MB/s   (card/host %.2fx)\n",
                "COPY 4 MiB, verified", size / card_us, size / host_us, host_us / card_us);
}

// Round trip of a NOP through the rings while the card thread polls, and
// the same after it went to sleep (a wake-up ioctl and a blocking wait).
void doorbell_demo(nicoff::Port &port) {
    constexpr int runs = 20000;
    std::vector<double> rtt(runs);
    const auto kicks0 = port.kicks();
    for (int i = 0; i < runs; i++) {
        auto t0 = Clock::now();
        port.nop(i);
        nicoff_cqe c{};
        while (port.poll(std::span(&c, 1)) == 0) {
        }
        rtt[i] = us_since(t0);
        require(c.status == 0 && c.tag == static_cast<std::uint64_t>(i), "NOP failed");
    }
    const auto polling_kicks = port.kicks() - kicks0;
    std::sort(rtt.begin(), rtt.end());

    constexpr int sleepy = 20;
    std::vector<double> wake(sleepy);
    for (int i = 0; i < sleepy; i++) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5)); // the card thread sleeps
        auto t0 = Clock::now();
        port.nop(i);
        wait_one(port);
        wake[i] = us_since(t0);
    }
    std::sort(wake.begin(), wake.end());
    std::printf("  %-34s %10.2f us median (p99 %.2f), %llu wake-up ioctls in %d ops\n",
                "NOP round trip, card polling", rtt[runs / 2], rtt[runs * 99 / 100],
                static_cast<unsigned long long>(polling_kicks), runs);
    std::printf("  %-34s %10.2f us median: kick + blocking poll()\n", "NOP round trip, card asleep",
                wake[sleepy / 2]);
}

void throughput_demo(nicoff::Port &port) {
    constexpr std::uint32_t batch = 32;
    constexpr std::uint64_t ops = 200000;
    std::vector<nicoff_cmd> cmds(batch);
    std::vector<nicoff_cqe> cqes(port.cq_entries());
    std::uint64_t posted = 0, done = 0;
    const auto kicks0 = port.kicks();
    auto t0 = Clock::now();
    while (done < ops) {
        if (posted < ops && port.free_slots() >= batch) {
            for (std::uint32_t i = 0; i < batch; i++)
                nicoff_prep_nop(&cmds[i], posted + i);
            posted += port.try_post_batch(cmds);
        }
        done += port.poll(cqes);
    }
    const double secs = us_since(t0) / 1e6;
    std::printf("  %-34s %10.0f ops/s, %.4f wake-up ioctls per op\n", "NOPs in batches of 32",
                ops / secs, static_cast<double>(port.kicks() - kicks0) / ops);
}

// Reliable messaging between two cards through the emulated switch: an
// 8-byte ping-pong and a 1 MiB stream, every byte checked.
void p2p_demo(nicoff::Port &a, unsigned card_a, unsigned card_b) {
    nicoff::Port b(card_b);
    constexpr std::size_t big = 1u << 20;
    std::vector<std::byte> abuf(big), bbuf(big);
    auto amr = a.register_memory(abuf, NICOFF_ACCESS_LOCAL_WRITE);
    auto bmr = b.register_memory(bbuf, NICOFF_ACCESS_LOCAL_WRITE);
    auto exchange = [&](nicoff::Port &from, nicoff::MemoryRegion &fmr, unsigned to_card,
                        nicoff::Port &to, nicoff::MemoryRegion &tmr, std::size_t len) {
        to.post(nicoff::make_recv(tmr.handle(), 0, len, NICOFF_ANY, NICOFF_ANY, 0, 0, 1));
        from.post(nicoff::make_send(to_card, to.number(), fmr.handle(), 0, len, 7, 2));
        nicoff_cqe r = wait_one(to), s = wait_one(from);
        require(r.status == 0 && r.result == len && s.status == 0, "message failed");
    };
    constexpr int rounds = 200;
    auto t0 = Clock::now();
    for (int i = 0; i < rounds; i++) {
        exchange(a, amr, card_b, b, bmr, 8);
        exchange(b, bmr, card_a, a, amr, 8);
    }
    const double half_rtt = us_since(t0) / (2.0 * rounds);
    for (std::size_t i = 0; i < big; i++)
        abuf[i] = static_cast<std::byte>(i * 7 + 3);
    t0 = Clock::now();
    exchange(a, amr, card_b, b, bmr, big);
    const double stream_us = us_since(t0);
    require(std::memcmp(abuf.data(), bbuf.data(), big) == 0, "1 MiB message corrupted");
    std::printf("  %-34s %10.2f us (card %u <-> card %u)\n", "SEND/RECV 8 B, half round trip",
                half_rtt, card_a, card_b);
    std::printf("  %-34s %10.1f MB/s, verified\n", "SEND/RECV 1 MiB", big / stream_us);
}

// Remote fetch-adds on a word of card `home`'s port: executed by the card,
// then by an AtomicServer thread there (blocking, seed 001's best host
// mode here); the word must count every one exactly once.
void atomic_demo(unsigned requester_card, unsigned home_card) {
    constexpr int ops = 2000;
    alignas(64) static std::uint64_t words[8];
    const auto mem = std::as_writable_bytes(std::span(words));
    nicoff::Port home(home_card), req(requester_card);
    auto mr = home.register_memory(mem, NICOFF_ACCESS_REMOTE_ATOMIC);
    double us[2];
    for (int host = 0; host < 2; host++) {
        std::atomic<bool> stop{false};
        std::unique_ptr<nicoff::AtomicServer> server;
        std::thread th;
        std::unique_ptr<nicoff::RemoteMemory> rm;
        if (host) {
            server = std::make_unique<nicoff::AtomicServer>(home, mem, nicoff::ServerMode::block);
            th = std::thread([&] { server->serve([&] { return stop.load(); }); });
            rm = std::make_unique<nicoff::HostMemory>(req);
        } else {
            rm = std::make_unique<nicoff::CardMemory>(req);
        }
        const nicoff::RemoteWord w{home_card, home.number(), host ? 0 : mr.rkey(), 8, 0};
        const auto t0 = Clock::now();
        for (int i = 0; i < ops; i++)
            require(rm->fetch_add(w, 1) == static_cast<std::uint64_t>(host * ops + i),
                    "fetch-add returned a wrong old value");
        us[host] = us_since(t0) / ops;
        stop = true;
        if (th.joinable())
            th.join();
    }
    require(words[0] == 2u * ops, "the word does not count every fetch-add once");
    std::printf("  %-34s %10.2f us by the card, %.2f us by a host server (%.1fx)\n",
                "remote fetch-add, one at a time", us[0], us[1], us[1] / us[0]);
}

// n processes, one per card, run dissemination barriers on the cards and
// then the same algorithm themselves over SEND/RECV; each checks that no
// one left barrier k before all had entered it.
void barrier_demo(unsigned n) {
    constexpr int barriers = 500;
    constexpr std::uint32_t port_no = 40;
    struct Shared {
        std::atomic<int> ready, failed;
        std::atomic<std::uint64_t> entered[2];
        double us[2];
        char error[160];
    };
    void *p =
        mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    require(p != MAP_FAILED, "mmap");
    auto *sh = new (p) Shared{};
    std::vector<pid_t> pids;
    for (unsigned r = 0; r < n; r++) {
        const pid_t pid = fork();
        require(pid >= 0, "fork");
        if (pid > 0) {
            pids.push_back(pid);
            continue;
        }
        int code = 0;
        try {
            nicoff::Port port(r, nicoff::PortConfig{port_no, 64, 64});
            std::vector<nicoff_member> members(n);
            for (unsigned i = 0; i < n; i++)
                members[i] = nicoff_member{i, port_no};
            sh->ready++;
            while (sh->ready.load() < static_cast<int>(n))
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            nicoff::GroupConfig gc;
            gc.algorithm = NICOFF_BARRIER_DISSEMINATION;
            gc.timeout = std::chrono::seconds(60);
            for (int host = 0; host < 2; host++) {
                std::unique_ptr<nicoff::Group> g;
                std::unique_ptr<nicoff::HostBarrier> hb;
                if (host)
                    hb = std::make_unique<nicoff::HostBarrier>(port, members, r,
                                                               NICOFF_BARRIER_DISSEMINATION, 0, gc);
                else
                    g = std::make_unique<nicoff::Group>(port, members, r, 0x4e00, gc);
                const auto t0 = Clock::now();
                for (std::uint64_t k = 1; k <= barriers; k++) {
                    sh->entered[host]++;
                    if (host)
                        hb->barrier();
                    else
                        g->barrier();
                    if (sh->entered[host].load() < k * n)
                        throw std::runtime_error("a process left a barrier early");
                }
                if (r == 0)
                    sh->us[host] = us_since(t0) / barriers;
                if (g)
                    g->destroy();
                else
                    hb.reset();
                // The next phase starts together (a card barrier of its own).
                nicoff::Group sync(port, members, r, 0x4e01 + host, gc);
                sync.destroy();
            }
        } catch (const std::exception &e) {
            if (!sh->failed.exchange(1))
                std::snprintf(sh->error, sizeof(sh->error), "rank %u: %s", r, e.what());
            code = 1;
        }
        std::fflush(nullptr);
        _exit(code);
    }
    bool ok = true;
    for (pid_t pid : pids) {
        int st = 0;
        ok &= waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    if (!ok)
        std::fprintf(stderr, "nicoff-demo: barrier: %s\n", sh->error);
    require(ok, "barrier processes failed");
    std::printf("  %-34s %10.1f us on the cards, %.1f us by the processes (%.1fx), %u "
                "processes\n",
                "barrier (dissemination)", sh->us[0], sh->us[1], sh->us[1] / sh->us[0], n);
    munmap(p, sizeof(Shared));
}

} // namespace

int main(int argc, char **argv) {
    const std::string_view arg = argc > 1 ? argv[1] : "";
    if (arg == "--version" || arg == "-V") {
        std::printf("nicoff-demo %s\n", NICOFF_VERSION_STRING);
        return 0;
    }
    if (argc > 1) {
        std::fprintf(arg == "--help" || arg == "-h" ? stdout : stderr,
                     "usage: nicoff-demo [--version]\n"
                     "Runs a tour of card 0 (and card 1 when there is one).\n");
        return arg == "--help" || arg == "-h" ? 0 : 2;
    }
    try {
        nicoff::Device dev(0);
        const auto &info = dev.info();
        std::printf("nicoff demo: %u emulated cards, %u ports each, ABI %u\n", info.num_cards,
                    info.max_ports, info.abi_version);
        nicoff::Port port(dev);
        std::printf("card %u, port %u: command ring %u, completion ring %u entries\n\n", info.card,
                    port.number(), port.cmd_entries(), port.cq_entries());
        copy_demo(port);
        doorbell_demo(port);
        throughput_demo(port);
        if (info.num_cards > 1) {
            p2p_demo(port, info.card, 1);
            atomic_demo(info.card, 1);
            barrier_demo(std::min(8u, info.num_cards));
        }
        const auto st = port.stats();
        std::printf("\nport counters: %llu commands, %llu completions, %llu kicks\n",
                    static_cast<unsigned long long>(st.cmds),
                    static_cast<unsigned long long>(st.cqes),
                    static_cast<unsigned long long>(st.kicks));
        std::printf("nicoff-demo: ok\n");
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "nicoff-demo: %s\n", e.what());
        return 1;
    }
}
