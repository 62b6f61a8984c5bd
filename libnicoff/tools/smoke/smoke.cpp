// nicoff-smoke: exercises the whole library against a real card and says
// what it saw.  Prints "nicoff-smoke: N passed, N failed" and exits non-zero
// on any failure.   Usage: nicoff-smoke [card]
#include <nicoff/nicoff.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <poll.h>
#include <string>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

int passed = 0, failed = 0;

void check(bool ok, const std::string &what) {
    std::printf("%s - %s\n", ok ? "ok" : "not ok", what.c_str());
    (ok ? passed : failed)++;
}

// errno of the std::system_error f throws, 0 if none.
int error_of(const std::function<void()> &f) {
    try {
        f();
    } catch (const std::system_error &e) {
        return e.code().value();
    }
    return 0;
}

nicoff_cqe wait_one(nicoff::Port &port) {
    nicoff_cqe c{};
    for (;;) {
        if (port.poll(std::span(&c, 1)) == 1)
            return c;
        if (!port.wait(std::chrono::milliseconds(5000)))
            throw std::system_error(ETIMEDOUT, std::generic_category(), "no completion in 5 s");
    }
}

void cxx_api(unsigned card) {
    nicoff::Device dev(card);
    const nicoff::DeviceInfo &info = dev.info();
    check(info.abi_version == NICOFF_ABI_VERSION, "device query: ABI version");
    check(info.card == card, "device query: card number " + std::to_string(info.card));
    std::printf("# card %u of %u, %u ports, rings up to %u, %u MRs per port\n", info.card,
                info.num_cards, info.max_ports, info.max_ring_entries, info.max_mrs);

    check(error_of([&] {
              nicoff::Port p(dev, {NICOFF_PORT_ANY, 3, 4});
          }) == EINVAL,
          "port: cmd ring not a power of two -> EINVAL");
    check(error_of([&] {
              nicoff::Port p(dev, {NICOFF_PORT_ANY, 64, 32});
          }) == EINVAL,
          "port: cq ring smaller than cmd ring -> EINVAL");

    nicoff::Port port(dev, {NICOFF_PORT_ANY, 16, 32});
    check(port.cmd_entries() == 16 && port.cq_entries() == 32, "port: ring sizes");
    std::printf("# port %u\n", port.number());
    check(error_of([&] {
              nicoff::Port p(dev, {port.number(), 16, 16});
          }) != 0,
          "port: same port number twice is refused");

    // NOPs: one by one, then a batch.
    port.nop(1);
    nicoff_cqe c = wait_one(port);
    check(c.tag == 1 && c.status == 0 && c.opcode == NICOFF_OP_NOP, "nop completes");
    std::vector<nicoff_cmd> batch;
    for (std::uint64_t t = 100; t < 116; t++)
        batch.push_back(nicoff::make_nop(t));
    check(port.post_batch(batch) == 16, "post_batch of 16 into a 16-entry ring");
    std::uint64_t next = 100;
    bool in_order = true;
    while (next < 116) {
        c = wait_one(port);
        in_order &= c.tag == next++ && c.status == 0;
    }
    check(in_order, "batch completes in order");

    // Backpressure: without polling, exactly cmd + cq commands fit.
    std::uint64_t posted = 0;
    for (int spins = 0; spins < 2000000 && posted < 48; spins++)
        posted += port.try_post(nicoff::make_nop(1000 + posted));
    check(posted == 48,
          "ring full after cmd_entries + cq_entries posts (" + std::to_string(posted) + ")");
    check(!port.try_post(nicoff::make_nop(0)), "try_post on a full ring returns false");
    check(error_of([&] { port.nop(0); }) == EAGAIN, "post on a full ring throws EAGAIN");
    pollfd pfd{port.fd(), POLLIN, 0};
    check(::poll(&pfd, 1, 1000) == 1 && (pfd.revents & POLLIN), "fd is POLLIN");
    std::uint64_t drained = 0;
    while (drained < posted) {
        c = wait_one(port);
        drained += c.tag == 1000 + drained;
    }
    check(drained == 48, "all 48 completed, in order (the card was woken after the cq drained)");
    check(!port.ready() && !port.wait(std::chrono::milliseconds(50)), "wait times out when idle");

    // Memory regions and COPY.
    std::vector<std::byte> src(8192), dst(8192);
    for (std::size_t i = 0; i < src.size(); i++)
        src[i] = static_cast<std::byte>(i * 7 + 3);
    nicoff::MemoryRegion msrc = port.register_memory(src, NICOFF_ACCESS_REMOTE_READ);
    nicoff::MemoryRegion mdst = port.register_memory(dst, NICOFF_ACCESS_LOCAL_WRITE);
    check(msrc.valid() && mdst.valid() && msrc.handle() != mdst.handle(), "two regions");
    port.copy(msrc, 100, mdst, 200, 5000, 77);
    c = wait_one(port);
    check(c.tag == 77 && c.status == 0 && c.result == 5000, "copy completes with 5000 bytes");
    check(std::memcmp(src.data() + 100, dst.data() + 200, 5000) == 0 && dst[199] == std::byte{0} &&
              dst[5200] == std::byte{0},
          "copy moved exactly the bytes asked for");
    check(error_of([&] { port.copy(msrc, 8000, mdst, 0, 193, 1); }) == EINVAL,
          "copy range beyond the region -> EINVAL before posting");
    // The card checks too: a raw command writing into a read-only region.
    port.post(nicoff::make_copy(mdst.handle(), 0, msrc.handle(), 0, 16, 78));
    c = wait_one(port);
    check(c.tag == 78 && c.status < 0,
          "copy into a region without LOCAL_WRITE fails (" + std::to_string(c.status) + ")");
    port.post(nicoff::make_copy(12345, 0, mdst.handle(), 0, 16, 79));
    c = wait_one(port);
    check(c.tag == 79 && c.status < 0, "copy from an unknown handle fails");

    // RegionMap with real regions.
    nicoff::RegionMap map;
    map.insert(msrc);
    map.insert(mdst);
    auto e = map.lookup(dst.data() + 4000, 16);
    check(e && e->handle == mdst.handle(), "RegionMap finds the region of an address");
    check(map.erase(src.data()) && !map.lookup(src.data()), "RegionMap erase");

    // Deregistration and stats.
    mdst.deregister();
    port.post(nicoff::make_copy(msrc.handle(), 0, mdst.handle(), 0, 16, 80));
    c = wait_one(port);
    check(c.status < 0, "copy into a deregistered region fails");
    const nicoff::PortStats st = port.stats();
    std::printf(
        "# stats: cmds %llu cqes %llu kicks %llu (made %llu) bad %llu cq_full %llu\n",
        static_cast<unsigned long long>(st.cmds), static_cast<unsigned long long>(st.cqes),
        static_cast<unsigned long long>(st.kicks), static_cast<unsigned long long>(port.kicks()),
        static_cast<unsigned long long>(st.bad_cmds), static_cast<unsigned long long>(st.cq_full));
    check(st.cmds == st.cqes && st.cmds == 1 + 16 + 48 + 1 + 2 + 1, "stats: commands counted");
    check(st.bad_cmds == 3, "stats: three bad commands");
    check(st.kicks == port.kicks(), "stats: kernel saw every kick the library made");
}

// Several threads post through one SharedPort while another polls: every
// tag completes exactly once, and each poster's tags in its own order.
void shared_port(unsigned card) {
    constexpr unsigned posters = 3;
    constexpr std::uint64_t per_thread = 20000;
    nicoff::Device dev(card);
    nicoff::SharedPort sp(dev, {NICOFF_PORT_ANY, 64, 128});
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < posters; t++)
        threads.emplace_back([&sp, t] {
            for (std::uint64_t i = 0; i < per_thread;) {
                if (sp.try_post(nicoff::make_nop((std::uint64_t{t} << 32) | i)))
                    i++;
                else
                    std::this_thread::yield();
            }
        });
    std::vector<std::uint64_t> next(posters, 0);
    std::uint64_t done = 0, bad = 0;
    std::vector<nicoff_cqe> cqes(64);
    while (done < posters * per_thread) {
        if (!sp.wait(std::chrono::milliseconds(5000)))
            break;
        const std::size_t n = sp.poll(cqes);
        for (std::size_t i = 0; i < n; i++) {
            const auto t = static_cast<unsigned>(cqes[i].tag >> 32);
            if (t >= posters || (cqes[i].tag & 0xffffffffu) != next[t]++ || cqes[i].status)
                bad++;
        }
        done += n;
    }
    for (auto &th : threads)
        th.join();
    check(done == posters * per_thread && bad == 0,
          "SharedPort: 3 posters x 20000 NOPs, each completed once and in its poster's order");
    check(sp.port().stats().kicks == sp.port().kicks(), "SharedPort: kicks counted by both sides");
}

// Scribbling a garbage producer index into the command ring puts the port
// into the error state: POLLERR, a PORT_ERROR completion, then EIO.
void error_state(unsigned card) {
    nicoff::Device dev(card);
    nicoff::Port port(dev, {NICOFF_PORT_ANY, 8, 8});
    const std::size_t len = (NICOFF_RING_HDR_SIZE + 8 * sizeof(nicoff_cmd) + 4095) & ~4095ul;
    void *m =
        ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, port.fd(), NICOFF_MMAP_CMD_RING);
    check(m != MAP_FAILED, "error state: second mapping of the command ring");
    if (m == MAP_FAILED)
        return;
    auto *hdr = static_cast<nicoff_ring_hdr *>(m);
    __atomic_store_n(&hdr->producer, hdr->producer + 1000, __ATOMIC_RELEASE);
    ::ioctl(port.fd(), NICOFF_IOC_KICK);
    pollfd pfd{port.fd(), POLLIN, 0};
    check(::poll(&pfd, 1, 5000) == 1 && (pfd.revents & POLLERR), "error state: fd is POLLERR");
    check(port.in_error(), "error state: in_error()");
    nicoff_cqe c{};
    bool got = false;
    try {
        got = port.wait(std::chrono::milliseconds(1000)) && port.poll(std::span(&c, 1)) == 1;
    } catch (const std::system_error &) {
    }
    check(got && c.opcode == NICOFF_OP_PORT_ERROR && c.status < 0,
          "error state: a PORT_ERROR completion is delivered");
    check(error_of([&] { port.wait(std::chrono::milliseconds(10)); }) == EIO,
          "error state: wait throws EIO once drained");
    check(!port.try_post(nicoff::make_nop(1)) && error_of([&] { port.nop(1); }) == EIO,
          "error state: posting fails with EIO");
    ::munmap(m, len);
}

void c_api(int card) {
    nicoff_device *dev = nullptr;
    check(nicoff_device_open(card, &dev) == 0, "C: device open");
    if (!dev)
        return;
    nicoff_query q{};
    check(nicoff_device_query(dev, &q) == 0 && q.abi_version == NICOFF_ABI_VERSION, "C: query");
    nicoff_port_attr bad{NICOFF_PORT_ANY, 6, 0, 0};
    nicoff_port *port = nullptr;
    check(nicoff_port_create(dev, &bad, &port) == -EINVAL, "C: bad ring size -> -EINVAL");
    check(nicoff_port_create(dev, nullptr, &port) == 0, "C: port with defaults");
    if (port) {
        check(nicoff_post_nop(port, 5) == 0, "C: post nop");
        check(nicoff_wait(port, 5000) == 1, "C: wait");
        nicoff_cqe cqe{};
        check(nicoff_poll(port, &cqe, 1) == 1 && cqe.tag == 5, "C: poll");
        check(nicoff_wait(port, 10) == 0, "C: wait times out");
        char buf[256];
        nicoff_mr *mr = nullptr;
        check(nicoff_mr_reg(port, buf, sizeof(buf), 0x100, &mr) == -EINVAL,
              "C: bad access bits -> -EINVAL");
        check(nicoff_mr_reg(port, buf, sizeof(buf), NICOFF_ACCESS_LOCAL_WRITE, &mr) == 0,
              "C: register");
        check(nicoff_mr_dereg(mr) == 0, "C: deregister");
        nicoff_port_stats st{};
        check(nicoff_port_get_stats(port, &st) == 0 && st.cmds == 1, "C: stats");
        nicoff_port_destroy(port);
    }
    nicoff_device_close(dev);
}

// Broadcasts of a group of three members, one thread and port each (on
// cards card, card + 1, card + 2 where there are so many): every root and
// an eager, a large and an empty length through Group's bounce buffer and
// a region, several outstanding requests waited in reverse order, the
// host-based tree, the C API and its refusals.
void broadcast(unsigned card) {
    constexpr std::uint32_t n = 3;
    const nicoff::Device dev(card);
    std::vector<nicoff::Port> ports;
    std::vector<nicoff_member> members;
    for (std::uint32_t r = 0; r < n; r++) {
        ports.emplace_back((card + r) % dev.info().num_cards);
        members.push_back({ports.back().card(), ports.back().number()});
    }
    const std::uint32_t gid = static_cast<std::uint32_t>(::getpid()) << 8;
    std::vector<std::string> bad(n), stage(n);
    auto fill = [](std::uint32_t root, std::uint64_t i, std::size_t b) {
        return static_cast<std::byte>((root * 37 + i * 11 + b) & 0xff);
    };
    auto member = [&](std::uint32_t rank) {
        nicoff::Port &port = ports[rank];
        nicoff::GroupConfig cfg;
        cfg.timeout = std::chrono::seconds(60);
        cfg.bcast_channels = 4;
        nicoff::Group g(port, members, rank, gid, cfg);
        auto expect = [&](bool ok, const std::string &what) {
            if (!ok && bad[rank].empty())
                bad[rank] = what;
        };
        // Broadcast seq, of len bytes from root, through bc's span form (a
        // Group's or a HostBroadcast's): every member ends with root's bytes.
        auto span_broadcast = [&](auto &bc, std::size_t len, std::uint32_t root, std::uint64_t seq,
                                  const char *what) {
            std::vector<std::byte> v(len);
            for (std::size_t b = 0; b < len; b++)
                v[b] = rank == root ? fill(root, seq, b) : std::byte{0};
            bc.broadcast(v, root);
            for (std::size_t b = 0; b < len; b++)
                expect(v[b] == fill(root, seq, b), what);
        };
        std::vector<std::byte> buf(100000);
        const nicoff::MemoryRegion mr(port, buf, NICOFF_ACCESS_LOCAL_WRITE);
        std::uint64_t i = 0;
        for (const std::size_t len : {std::size_t{100}, std::size_t{40000}, std::size_t{0}})
            for (std::uint32_t root = 0; root < n; root++, i++) {
                stage[rank] = "span " + std::to_string(len) + " B from " + std::to_string(root);
                span_broadcast(g, len, root, i, "span broadcast data");
                std::fill(buf.begin(), buf.end(), std::byte{0});
                if (rank == root)
                    for (std::size_t b = 0; b < len; b++)
                        buf[8 + b] = fill(root, i + 100, b);
                stage[rank] = "region " + std::to_string(len) + " B from " + std::to_string(root);
                g.broadcast(mr, 8, len, root);
                for (std::size_t b = 0; b < len; b++)
                    expect(buf[8 + b] == fill(root, i + 100, b), "region broadcast data");
                expect(buf[0] == std::byte{0} && buf[8 + len] == std::byte{0},
                       "region broadcast wrote outside its range");
            }
        // More requests than channels, from rotating roots, waited last first.
        constexpr std::uint32_t k = 10;
        std::vector<std::vector<std::byte>> bufs(k, std::vector<std::byte>(64));
        std::vector<nicoff::BcastRequest> reqs;
        stage[rank] = "outstanding requests";
        for (std::uint32_t j = 0; j < k; j++) {
            for (std::size_t b = 0; b < 64; b++)
                bufs[j][b] = rank == j % n ? fill(j, j, b) : std::byte{0};
            reqs.push_back(g.start_broadcast(bufs[j], j % n));
        }
        while (!reqs.front().test())
            std::this_thread::yield();
        for (std::uint32_t j = k; j-- > 0;)
            expect(reqs[j].wait() == 64, "request's length");
        for (std::uint32_t j = 0; j < k; j++)
            for (std::size_t b = 0; b < 64; b++)
                expect(bufs[j][b] == fill(j, j, b), "outstanding broadcast data");
        expect(error_of([&] { g.broadcast(buf, n); }) == EINVAL, "root outside -> EINVAL");
        expect(error_of([&] { g.broadcast(mr, buf.size() - 4, 8, 0); }) == EINVAL,
               "range outside the region -> EINVAL");
        expect(g.broadcasts() == 3 * n * 2 + k, "broadcasts counted");
        g.barrier(); // every member holds the last broadcasts before any destroys
        g.destroy();
        expect(error_of([&] { (void)g.start_broadcast(buf, 0); }) == EINVAL,
               "destroyed group -> EINVAL");

        nicoff::HostBroadcast hb(port, members, rank, cfg);
        stage[rank] = "host";
        for (const std::size_t len : {std::size_t{0}, std::size_t{100}, std::size_t{70000}})
            for (std::uint32_t root = 0; root < n; root++, i++)
                span_broadcast(hb, len, root, i, "host broadcast data");
    };
    std::vector<std::thread> threads;
    std::vector<std::string> errors(n);
    for (std::uint32_t r = 0; r < n; r++)
        threads.emplace_back([&, r] {
            try {
                member(r);
            } catch (const std::exception &e) {
                errors[r] = stage[r] + ": " + e.what();
            }
        });
    for (auto &t : threads)
        t.join();
    for (std::uint32_t r = 0; r < n; r++) {
        check(errors[r].empty(), "broadcast rank " + std::to_string(r) + ": " + errors[r]);
        check(bad[r].empty(), "broadcast rank " + std::to_string(r) + " checks: " + bad[r]);
    }
}

// The C API's broadcasts over the same three ports' cards, and its refusal
// of a channel count outside 2..64 (every member's card refuses it alone).
void c_broadcast(unsigned card) {
    constexpr std::uint32_t n = 3;
    nicoff_device *dev = nullptr;
    if (nicoff_device_open(static_cast<int>(card), &dev) != 0)
        return check(false, "C bcast: device open");
    nicoff_query q{};
    nicoff_device_query(dev, &q);
    nicoff_device_close(dev);
    std::vector<nicoff_port *> ports(n);
    std::vector<nicoff_member> members(n);
    for (std::uint32_t r = 0; r < n; r++) {
        nicoff_device *d = nullptr;
        nicoff_device_open(static_cast<int>((card + r) % q.num_cards), &d);
        if (!d || nicoff_port_create(d, nullptr, &ports[r]) != 0)
            return check(false, "C bcast: port");
        nicoff_device_close(d);
        members[r] = {(card + r) % q.num_cards,
                      static_cast<std::uint32_t>(nicoff_port_number(ports[r]))};
    }
    const std::uint32_t gid = static_cast<std::uint32_t>(::getpid()) << 8 | 0x80;
    std::vector<int> rc(n, -1), bad_rc(n, 0);
    std::vector<std::thread> threads;
    for (std::uint32_t r = 0; r < n; r++)
        threads.emplace_back([&, r] {
            nicoff_group_attr attr{};
            attr.algorithm = NICOFF_BARRIER_DEFAULT;
            attr.bcast_channels = 1;
            nicoff_group *g = nullptr;
            bad_rc[r] = nicoff_group_create_attr(ports[r], members.data(), n, r, gid, &attr, &g);
            attr.bcast_channels = 2;
            attr.bcast_flags = NICOFF_BCAST_F_NOCRC;
            int e = nicoff_group_create_attr(ports[r], members.data(), n, r, gid + 1, &attr, &g);
            char data[32];
            for (std::uint32_t root = 0; e == 0 && root < n; root++) {
                std::memset(data, r == root ? 'a' + static_cast<int>(root) : 0, sizeof(data));
                nicoff_bcast_req *req = nullptr;
                e = nicoff_group_broadcast_start_buf(g, data, sizeof(data), root, &req);
                if (e == 0)
                    e = nicoff_bcast_wait(req);
                if (e == 0 && data[31] != 'a' + static_cast<int>(root))
                    e = -EIO;
            }
            if (e == 0)
                e = nicoff_group_barrier(g);
            if (e == 0)
                e = nicoff_group_destroy(g);
            rc[r] = e;
        });
    for (auto &t : threads)
        t.join();
    for (std::uint32_t r = 0; r < n; r++) {
        check(rc[r] == 0, "C bcast rank " + std::to_string(r) + ": " + std::to_string(rc[r]));
        check(bad_rc[r] == -EINVAL,
              "C bcast: 1 channel -> -EINVAL (" + std::to_string(bad_rc[r]) + ")");
    }
    for (nicoff_port *p : ports)
        nicoff_port_destroy(p);
}

} // namespace

int main(int argc, char **argv) {
    const unsigned card = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 0;
    try {
        cxx_api(card);
    } catch (const std::system_error &e) {
        check(false, std::string("C++ API: unexpected error: ") + e.what());
    }
    try {
        shared_port(card);
        error_state(card);
    } catch (const std::system_error &e) {
        check(false, std::string("unexpected error: ") + e.what());
    }
    c_api(static_cast<int>(card));
    try {
        broadcast(card);
    } catch (const std::system_error &e) {
        check(false, std::string("broadcast: unexpected error: ") + e.what());
    }
    c_broadcast(card);
    std::printf("nicoff-smoke: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
