// nicoff::StridedEngine (the methods nic, hbna, naive and auto) and
// nicoff::StridedTarget (HBNA's target thread): see <nicoff/strided.hpp>
// and Documentation/strided.md.
#include <nicoff/strided.hpp>

#include "common.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace nicoff {

using detail::debugging;
using detail::throw_errno;

namespace {

using Clock = std::chrono::steady_clock;

enum class Kind : std::uint32_t { put = 1, get = 2, acc = 3 };

// What an HBNA source sends after a piece's bytes (put, acc) or instead of
// them (get): where the piece goes in the target's memory.
struct HbnaDesc {
    std::uint32_t kind = 0;
    std::uint32_t levels = 0;
    std::uint32_t buf = 0; // the target buffer the source claimed
    std::uint32_t acc = 0;
    std::int64_t scale = 0;
    std::uint64_t token = 0;  // the reply's msg_tag
    std::uint64_t offset = 0; // the target side's offset in the target's memory
    std::uint64_t count[NICOFF_STRIDED_MAX_LEVELS + 1] = {};
    std::uint64_t stride[NICOFF_STRIDED_MAX_LEVELS] = {};
    std::uint64_t from = 0; // the piece: bytes [from, from + len) of the shape's stream
    std::uint64_t len = 0;
    std::uint32_t reply_rkey = 0; // get: the source's bounce region
    std::uint32_t reserved = 0;
    std::uint64_t reply_off = 0;
};

constexpr std::uint64_t desc_msg_tag = 0x68626e61; // "hbna"

// Internal command tags: what the command is, a slot and an operation or
// buffer number.
constexpr std::uint64_t tag_of(std::uint64_t kind, std::uint64_t slot, std::uint64_t id) {
    return kind << 56 | (slot & 0xff) << 48 | (id & 0xffffffffffffull);
}
constexpr std::uint64_t kind_of(std::uint64_t tag) { return tag >> 56; }
constexpr std::uint64_t slot_of(std::uint64_t tag) { return tag >> 48 & 0xff; }
constexpr std::uint64_t id_of(std::uint64_t tag) { return tag & 0xffffffffffffull; }

enum : std::uint64_t { k_nic = 1, k_naive, k_cas, k_put, k_desc, k_recv, k_reply, k_release };

std::uint64_t thread_cpu_ns() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

// True when every byte of the shape on side lies inside [0, size).
bool side_fits(std::span<const std::uint64_t> count, const StridedSide &side,
               std::uint64_t size) noexcept {
    std::uint64_t end = side.offset;
    for (std::size_t i = 1; i < count.size(); i++) {
        std::uint64_t step = 0;
        if (count[i] == 0)
            return true;
        if (__builtin_mul_overflow(count[i] - 1, side.stride[i - 1], &step) ||
            __builtin_add_overflow(end, step, &end))
            return false;
    }
    return !__builtin_add_overflow(end, count[0], &end) && end <= size;
}

template <class T>
void acc_one(std::byte *dst, const std::byte *src, T scale) noexcept {
    T d, s;
    std::memcpy(&d, dst, sizeof(T));
    std::memcpy(&s, src, sizeof(T));
    d = static_cast<T>(d + scale * s);
    std::memcpy(dst, &d, sizeof(T));
}

// dst op= src over n bytes: a copy, or ARMCI's accumulate (wrapping integers).
void apply(std::uint32_t acc, std::int64_t scale, std::byte *dst, const std::byte *src,
           std::uint64_t n) noexcept {
    switch (acc) {
    case NICOFF_ACC_INT32:
        for (std::uint64_t i = 0; i + 4 <= n; i += 4)
            acc_one<std::uint32_t>(dst + i, src + i, static_cast<std::uint32_t>(scale));
        return;
    case NICOFF_ACC_INT64:
        for (std::uint64_t i = 0; i + 8 <= n; i += 8)
            acc_one<std::uint64_t>(dst + i, src + i, static_cast<std::uint64_t>(scale));
        return;
    case NICOFF_ACC_DOUBLE:
        for (std::uint64_t i = 0; i + 8 <= n; i += 8)
            acc_one<double>(dst + i, src + i, static_cast<double>(scale));
        return;
    default:
        std::memmove(dst, src, n);
    }
}

std::uint64_t elem_bytes(std::uint32_t acc) { return acc == NICOFF_ACC_INT32 ? 4 : 8; }

} // namespace

// ------------------------------------------------------------- the target --
struct StridedTarget::Impl {
    Impl(std::uint32_t card, std::span<std::byte> memory, Options o)
        : mem(memory), opts(o), port(card, PortConfig{NICOFF_PORT_ANY, 256, 256}),
          nrecv(std::min<std::uint32_t>(2 * o.buffers, 128)) {
        if (o.buffers == 0 || o.buffers > 1024 || o.buffer_bytes < 64 ||
            o.buffer_bytes > (64u << 20) || o.buffer_bytes % 8)
            throw_errno(EINVAL,
                        "StridedTarget: 1 to 1024 buffers of 64 B to 64 MiB, 8-byte multiples");
        bufs.resize(o.buffers * o.buffer_bytes);
        flags.assign(o.buffers, 0);
        descs.resize(nrecv);
        replies.resize(nrecv);
        pending.resize(nrecv);
        buf_mr = port.register_memory(std::as_writable_bytes(std::span(bufs)),
                                      NICOFF_ACCESS_LOCAL_WRITE | NICOFF_ACCESS_REMOTE_WRITE);
        flag_mr = port.register_memory(std::as_writable_bytes(std::span(flags)),
                                       NICOFF_ACCESS_LOCAL_WRITE | NICOFF_ACCESS_REMOTE_ATOMIC);
        desc_mr = port.register_memory(std::as_writable_bytes(std::span(descs)),
                                       NICOFF_ACCESS_LOCAL_WRITE);
        reply_mr = port.register_memory(std::as_writable_bytes(std::span(replies)), 0);
        for (std::uint32_t i = 0; i < nrecv; i++)
            post_recv(i);
        thread = std::thread([this] { run(); });
    }
    ~Impl() {
        stop.store(true, std::memory_order_release);
        thread.join();
    }

    struct Pending {
        std::uint32_t card = 0, port = 0, buf = 0;
        std::uint64_t token = 0, len = 0;
    };

    std::span<std::byte> mem;
    Options opts;
    Port port;
    std::uint32_t nrecv;
    std::vector<std::byte> bufs;
    std::vector<std::uint64_t> flags;
    std::vector<HbnaDesc> descs;
    std::vector<std::int64_t> replies;
    std::vector<Pending> pending; // by receive slot: the get piece being put back
    MemoryRegion buf_mr, flag_mr, desc_mr, reply_mr;
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> pieces{0}, bytes{0}, unpack_ns{0}, pack_ns{0};
    std::thread thread;

    // Every receive slot has at most one command in flight (its RECV, a
    // get's PUT or the reply's SEND), and there are fewer slots than ring
    // entries: a post cannot find the ring full.
    void post(const nicoff_cmd &c) {
        if (!port.try_post(c))
            throw_errno(port.in_error() ? EIO : ENOSPC, "StridedTarget: post");
    }
    void post_recv(std::uint32_t i) {
        post(make_recv(desc_mr.handle(), i * sizeof(HbnaDesc), sizeof(HbnaDesc), NICOFF_ANY,
                       NICOFF_ANY, 0, 0, tag_of(k_recv, 0, i)));
    }
    void release(std::uint32_t buf) {
        std::atomic_ref<std::uint64_t>(flags[buf]).store(0, std::memory_order_release);
    }
    void reply(std::uint32_t i, const Pending &p, std::int64_t status) {
        replies[i] = status;
        post(make_send(p.card, p.port, reply_mr.handle(), i * sizeof(std::int64_t),
                       sizeof(std::int64_t), p.token, tag_of(k_reply, 0, i)));
    }

    // A descriptor in receive slot i: the bytes of its piece where they go.
    void serve(std::uint32_t i, const nicoff_cqe &c) {
        const HbnaDesc d = descs[i];
        Pending p{c.src_card, c.src_port, d.buf, d.token, d.len};
        if (c.result != sizeof(HbnaDesc) || d.levels > NICOFF_STRIDED_MAX_LEVELS ||
            d.buf >= opts.buffers) {
            // Not a descriptor this library sent: nothing to free or answer.
            post_recv(i);
            return;
        }
        const std::span<const std::uint64_t> count(d.count, d.levels + 1);
        const StridedSide side{d.offset, std::span<const std::uint64_t>(d.stride, d.levels)};
        std::int64_t status = static_cast<std::int64_t>(d.len);
        ShapeSize sz{};
        try {
            sz = shape_size(count);
        } catch (const std::system_error &e) {
            status = -e.code().value();
        }
        if (status >= 0 && (d.len > opts.buffer_bytes || d.from > sz.bytes ||
                            d.len > sz.bytes - d.from || !side_fits(count, side, mem.size())))
            status = -ERANGE;
        if (status >= 0 && d.kind == static_cast<std::uint32_t>(Kind::acc) &&
            (d.acc < NICOFF_ACC_INT32 || d.acc > NICOFF_ACC_DOUBLE ||
             count[0] % elem_bytes(d.acc) || d.from % elem_bytes(d.acc)))
            status = -EINVAL;
        std::byte *buf = bufs.data() + d.buf * opts.buffer_bytes;
        pieces.fetch_add(1, std::memory_order_relaxed);
        if (status >= 0 && d.kind == static_cast<std::uint32_t>(Kind::get)) {
            const std::uint64_t t0 = thread_cpu_ns();
            std::uint64_t at = 0;
            for_each_piece(count, side, d.from, d.len, [&](std::uint64_t off, std::uint64_t n) {
                std::memcpy(buf + at, mem.data() + off, n);
                at += n;
            });
            pack_ns.fetch_add(thread_cpu_ns() - t0, std::memory_order_relaxed);
            bytes.fetch_add(d.len, std::memory_order_relaxed);
            pending[i] = p;
            post(make_rdma(NICOFF_OP_PUT, p.card, p.port, d.reply_rkey, d.reply_off,
                           buf_mr.handle(), d.buf * opts.buffer_bytes, d.len, tag_of(k_put, 0, i)));
            return;
        }
        if (status >= 0 && (d.kind == static_cast<std::uint32_t>(Kind::put) ||
                            d.kind == static_cast<std::uint32_t>(Kind::acc))) {
            const std::uint32_t acc = d.kind == static_cast<std::uint32_t>(Kind::acc)
                                          ? d.acc
                                          : std::uint32_t{NICOFF_ACC_NONE};
            const std::uint64_t t0 = thread_cpu_ns();
            std::uint64_t at = 0;
            for_each_piece(count, side, d.from, d.len, [&](std::uint64_t off, std::uint64_t n) {
                apply(acc, d.scale, mem.data() + off, buf + at, n);
                at += n;
            });
            unpack_ns.fetch_add(thread_cpu_ns() - t0, std::memory_order_relaxed);
            bytes.fetch_add(d.len, std::memory_order_relaxed);
        } else if (status >= 0) {
            status = -EINVAL;
        }
        release(d.buf);
        reply(i, p, status);
    }

    void handle(const nicoff_cqe &c) {
        const auto i = static_cast<std::uint32_t>(id_of(c.tag));
        switch (kind_of(c.tag)) {
        case k_recv:
            if (c.status < 0)
                post_recv(i);
            else
                serve(i, c);
            return;
        case k_put: // a get's piece is at the source: its buffer is free
            release(pending[i].buf);
            reply(i, pending[i],
                  c.status < 0 ? c.status : static_cast<std::int64_t>(pending[i].len));
            return;
        case k_reply:
            if (c.status < 0 && debugging(1))
                detail::debug_log("StridedTarget: a reply failed: %d", c.status);
            post_recv(i);
            return;
        default:
            return;
        }
    }

    void run() noexcept {
        std::array<nicoff_cqe, 32> cqes{};
        try {
            while (!stop.load(std::memory_order_acquire)) {
                const std::size_t n = port.poll(cqes);
                for (std::size_t k = 0; k < n; k++)
                    handle(cqes[k]);
                if (n == 0)
                    port.wait(std::chrono::milliseconds(10));
            }
        } catch (const std::exception &e) {
            // The port failed (or a post did): the sources' pieces time out.
            if (debugging(1))
                detail::debug_log("StridedTarget: stopped: %s", e.what());
        }
    }
};

StridedTarget::StridedTarget(std::uint32_t card, std::span<std::byte> memory, Options opts)
    : impl_(std::make_unique<Impl>(card, memory, opts)) {}

StridedTarget::~StridedTarget() = default;

HbnaAddress StridedTarget::address() const noexcept {
    return {impl_->port.card(),    impl_->port.number(), impl_->buf_mr.rkey(),
            impl_->flag_mr.rkey(), impl_->opts.buffers,  impl_->opts.buffer_bytes};
}

StridedTarget::Stats StridedTarget::stats() const noexcept {
    return {impl_->pieces.load(), impl_->bytes.load(), impl_->unpack_ns.load(),
            impl_->pack_ns.load()};
}

// ------------------------------------------------------------- the source --
struct StridedEngine::Impl {
    Impl(Port &p, StridedOptions o) : port(p), opts(o), strided(p) {
        if (o.naive_window == 0 || o.hbna_slots == 0 || o.hbna_slots > 255)
            throw_errno(EINVAL, "StridedEngine: naive_window >= 1, hbna_slots 1 to 255");
    }

    // A shape's counts or strides (at most 9, shape_size() checked), kept
    // in the operation: no allocation per operation for them.
    struct ShapeArray {
        std::array<std::uint64_t, NICOFF_STRIDED_MAX_LEVELS + 1> v{};
        std::size_t n = 0;

        void assign(std::span<const std::uint64_t> from) {
            n = from.size();
            std::copy(from.begin(), from.end(), v.begin());
        }
        std::size_t size() const { return n; }
        const std::uint64_t *begin() const { return v.data(); }
        const std::uint64_t *end() const { return v.data() + n; }
        operator std::span<const std::uint64_t>() const { return {v.data(), n}; }
    };

    struct Op {
        std::uint64_t tag = 0;
        StridedMethod method = StridedMethod::nic;
        Kind kind = Kind::put;
        bool blocking = false;
        std::int32_t status = 0;
        std::uint64_t bytes = 0;
        std::uint64_t outstanding = 0; // commands (nic, naive) or pieces (hbna) in flight
        bool all_posted = false;
        // nic
        const MemoryRegion *local = nullptr;
        // naive
        std::vector<Segment> chunks;
        std::size_t next = 0;
        // hbna (and nic's arguments)
        ShapeArray count, lstride, rstride;
        std::uint64_t loff = 0, roff = 0;
        StridedPeer peer;
        std::uint32_t acc = 0;
        std::int64_t scale = 0;
        std::uint64_t next_from = 0;
        std::uint64_t piece = 0;
        // Descriptors go, and a get's pieces are unpacked, in the stream's
        // order, so that overlapping destination blocks end as the latest
        // in message order, as with the other methods.
        std::uint64_t desc_from = 0;
        std::uint64_t unpack_from = 0;
        // A piece still asking for a target buffer: the next one waits, so
        // that pieces claim buffers in stream order and one holding a
        // buffer never waits for an earlier one that has none (which, with
        // every buffer so held, would wait forever).
        bool claiming = false;

        StridedSide lside() const { return {loff, lstride}; }
        StridedSide rside() const { return {roff, rstride}; }
    };

    struct Slot {
        bool busy = false;
        std::uint64_t op = 0;
        std::uint64_t from = 0, len = 0;
        std::uint32_t buf = 0;
        std::uint32_t tries = 0;
        bool ready = false;   // its descriptor may go (bytes landed, or a get's buffer claimed)
        bool replied = false; // the target's reply came
        std::int64_t status = 0;
    };

    Port &port;
    StridedOptions opts;
    Strided strided;
    std::uint64_t next_id = 1;
    std::map<std::uint64_t, Op> ops;
    std::deque<std::uint64_t> waiting; // operations with commands or pieces still to post
    std::deque<StridedDone> done;
    std::map<std::uint64_t, StridedDone> finished_blocking;
    std::deque<nicoff_cmd> backlog; // commands the full ring refused, in order
    std::uint64_t naive_out = 0;
    // hbna, set up by the first hbna operation
    std::uint64_t slot_bytes = 0;
    std::vector<std::byte> bounce;
    std::vector<HbnaDesc> descs;
    std::vector<std::int64_t> replies;
    MemoryRegion bounce_mr, desc_mr, reply_mr;
    std::vector<Slot> slots;
    std::uint64_t buf_cursor = 0;
    std::optional<StridedModel> model;

    void post(const nicoff_cmd &c) {
        if (!backlog.empty() || !port.try_post(c)) {
            if (port.in_error())
                throw_errno(EIO, "strided: the port is in the error state");
            backlog.push_back(c);
        }
    }

    void hbna_setup(const HbnaAddress &a) {
        if (!slots.empty())
            return;
        slot_bytes = opts.hbna_piece ? opts.hbna_piece : a.buffer_bytes;
        slot_bytes -= slot_bytes % 8;
        if (slot_bytes == 0)
            throw_errno(EINVAL, "hbna: pieces of at least 8 bytes");
        const std::uint32_t n = opts.hbna_slots;
        bounce.resize(n * slot_bytes);
        descs.resize(n);
        replies.resize(n);
        bounce_mr = port.register_memory(std::as_writable_bytes(std::span(bounce)),
                                         NICOFF_ACCESS_LOCAL_WRITE | NICOFF_ACCESS_REMOTE_WRITE);
        desc_mr = port.register_memory(std::as_writable_bytes(std::span(descs)), 0);
        reply_mr = port.register_memory(std::as_writable_bytes(std::span(replies)),
                                        NICOFF_ACCESS_LOCAL_WRITE);
        slots.resize(n);
        for (std::uint32_t r = 0; r < n; r++)
            post_reply_recv(r);
    }
    void post_reply_recv(std::uint32_t r) {
        post(make_recv(reply_mr.handle(), r * sizeof(std::int64_t), sizeof(std::int64_t),
                       NICOFF_ANY, NICOFF_ANY, 0, 0, tag_of(k_recv, 0, r)));
    }

    std::uint64_t start(StridedMethod m, Kind kind, const MemoryRegion &local,
                        const StridedSide &lside, const StridedPeer &peer, const StridedSide &rside,
                        std::span<const std::uint64_t> count, std::uint32_t acc, std::int64_t scale,
                        std::uint64_t tag, bool blocking);
    bool post_nic(Op &op, std::uint64_t id);
    bool post_hbna_piece(Op &op, std::uint64_t id);
    bool post_chunk(const Op &op, std::uint64_t id);
    void claim(std::uint32_t s, std::uint64_t id, const Op &op);
    void pump();
    void finish_piece(std::uint32_t s, std::int64_t status);
    std::optional<std::uint32_t> piece_at(std::uint64_t id, std::uint64_t from,
                                          bool Slot::*want) const;
    void send_descs(Op &op, std::uint64_t id);
    void abandon(std::uint64_t id);
    void unpack_gets(Op &op, std::uint64_t id);
    void handle(const nicoff_cqe &c);
    void maybe_done(std::uint64_t id);
    bool progress();
    void wait_some(Clock::time_point deadline);
    StridedDone wait_for(std::uint64_t id);
    void run(StridedMethod m, Kind kind, const MemoryRegion &local, const StridedSide &lside,
             const StridedPeer &peer, const StridedSide &rside,
             std::span<const std::uint64_t> count, std::uint32_t acc, std::int64_t scale);
    const StridedModel &get_model();
    const StridedModel &measure();
};

std::uint64_t StridedEngine::Impl::start(StridedMethod m, Kind kind, const MemoryRegion &local,
                                         const StridedSide &lside, const StridedPeer &peer,
                                         const StridedSide &rside,
                                         std::span<const std::uint64_t> count, std::uint32_t acc,
                                         std::int64_t scale, std::uint64_t tag, bool blocking) {
    const ShapeSize sz = shape_size(count);
    const std::size_t levels = count.size() - 1;
    if (lside.stride.size() < levels || rside.stride.size() < levels)
        throw_errno(EINVAL, "strided shape: a stride array shorter than the levels");
    if (!local.belongs_to(port))
        throw_errno(EINVAL, "strided: the local region is not this engine's port's");
    if (!side_fits(count, lside, local.size()))
        throw_errno(ERANGE, "strided: the local side is outside its region");
    if (kind == Kind::acc &&
        (acc < NICOFF_ACC_INT32 || acc > NICOFF_ACC_DOUBLE || count[0] % elem_bytes(acc)))
        throw_errno(EINVAL, "strided acc: an element type and whole elements per chunk");
    if (m == StridedMethod::automatic) {
        const StridedModel &mod = get_model();
        m = mod.choose(sz.chunks, sz.bytes, peer.hbna.buffers != 0);
        // The card does no floating point: a double accumulate stays on the host.
        if (kind == Kind::acc && acc == NICOFF_ACC_DOUBLE && peer.hbna.buffers)
            m = StridedMethod::hbna;
    }
    if (m == StridedMethod::hbna && peer.hbna.buffers == 0)
        throw_errno(EINVAL, "hbna: the peer has no StridedTarget");
    const std::uint64_t id = next_id++;
    Op &op = ops[id];
    op.tag = tag;
    op.method = m;
    op.kind = kind;
    op.blocking = blocking;
    op.bytes = sz.bytes;
    op.local = &local;
    op.count.assign(count);
    op.lstride.assign(lside.stride.first(levels));
    op.rstride.assign(rside.stride.first(levels));
    op.loff = lside.offset;
    op.roff = rside.offset;
    op.peer = peer;
    op.acc = acc;
    op.scale = scale;
    if (m == StridedMethod::naive && sz.bytes)
        for_each_chunk(count, lside, rside,
                       [&](std::uint64_t l, std::uint64_t rem, std::uint64_t n) {
                           op.chunks.push_back({l, rem, n});
                       });
    if (m == StridedMethod::hbna) {
        hbna_setup(peer.hbna);
        op.piece = std::min(slot_bytes, peer.hbna.buffer_bytes);
        op.piece -= op.piece % 8;
    }
    if (sz.bytes == 0 && m != StridedMethod::nic) {
        op.all_posted = true;
        maybe_done(id);
    } else {
        waiting.push_back(id);
        pump();
        // Held back (a full ring): take the completions ready, which frees
        // the card to go on while the caller is still starting operations.
        if (!waiting.empty())
            progress();
    }
    return id;
}

bool StridedEngine::Impl::post_nic(Op &op, std::uint64_t id) {
    if (!backlog.empty())
        return false;
    const std::uint64_t t = tag_of(k_nic, 0, id);
    bool ok = false;
    switch (op.kind) {
    case Kind::put:
        ok = strided.try_put(*op.local, op.lside(), op.peer.region, op.rside(), op.count, t);
        break;
    case Kind::get:
        ok = strided.try_get(op.peer.region, op.rside(), *op.local, op.lside(), op.count, t);
        break;
    case Kind::acc:
        ok = strided.try_acc(op.acc, op.scale, *op.local, op.lside(), op.peer.region, op.rside(),
                             op.count, t);
        break;
    }
    if (ok) {
        op.outstanding = 1;
        op.all_posted = true;
    }
    return ok;
}

// Naive: chunk op.next as a contiguous PUT or GET, or a one-chunk
// accumulate (level 0) on the card.
bool StridedEngine::Impl::post_chunk(const Op &op, std::uint64_t id) {
    const Segment &g = op.chunks[op.next];
    const RemoteRegion &r = op.peer.region;
    const std::uint64_t t = tag_of(k_naive, 0, id);
    if (op.kind == Kind::acc) {
        const std::uint64_t one[] = {g.bytes};
        return strided.try_acc(op.acc, op.scale, *op.local, {g.local_offset, {}}, r,
                               {g.remote_offset, {}}, one, t);
    }
    return port.try_post(make_rdma(op.kind == Kind::get ? NICOFF_OP_GET : NICOFF_OP_PUT, r.card,
                                   r.port, r.rkey, g.remote_offset, op.local->handle(),
                                   g.local_offset, g.bytes, t));
}

void StridedEngine::Impl::claim(std::uint32_t s, std::uint64_t id, const Op &op) {
    const HbnaAddress &a = op.peer.hbna;
    slots[s].buf = static_cast<std::uint32_t>(buf_cursor++ % a.buffers);
    const RemoteWord w{a.card, a.port, a.flag_rkey, 8, slots[s].buf * sizeof(std::uint64_t)};
    post(make_compare_swap(w, 0, 1, tag_of(k_cas, s, id)));
}

// Starts op's next piece in a free slot: claims a target buffer and, while
// the card asks, packs (put, acc).  False when no slot is free.
bool StridedEngine::Impl::post_hbna_piece(Op &op, std::uint64_t id) {
    if ((!opts.hbna_pipelined && op.outstanding) || op.claiming)
        return false;
    const auto it = std::find_if(slots.begin(), slots.end(), [](const Slot &s) { return !s.busy; });
    if (it == slots.end())
        return false;
    const auto s = static_cast<std::uint32_t>(it - slots.begin());
    Slot &sl = *it;
    sl = {};
    sl.busy = true;
    sl.op = id;
    sl.from = op.next_from;
    sl.len = std::min(op.piece, op.bytes - op.next_from);
    op.next_from += sl.len;
    op.outstanding++;
    op.all_posted = op.next_from == op.bytes;
    op.claiming = true;
    claim(s, id, op);
    if (op.kind != Kind::get) {
        std::byte *out = bounce.data() + s * slot_bytes;
        const std::byte *base = op.local->data();
        std::uint64_t at = 0;
        for_each_piece(op.count, op.lside(), sl.from, sl.len,
                       [&](std::uint64_t off, std::uint64_t n) {
                           std::memcpy(out + at, base + off, n);
                           at += n;
                       });
    }
    return true;
}

// Posts what the waiting operations can, in order.  The command ring, the
// naive window and the HBNA slots are shared: at the first operation one of
// them stops, every later one waits too (order kept), and the walk ends
// there, so that a pump costs the operations it moves, not all that wait
// (thousands started at once made each start retry every one before it).
void StridedEngine::Impl::pump() {
    while (!backlog.empty() && port.try_post(backlog.front()))
        backlog.pop_front();
    bool stopped = false;
    for (auto it = waiting.begin(); it != waiting.end() && !stopped;) {
        const auto found = ops.find(*it);
        if (found == ops.end()) { // failed and finished before all its pieces went
            it = waiting.erase(it);
            continue;
        }
        Op &op = found->second;
        switch (op.method) {
        case StridedMethod::nic:
            stopped = !post_nic(op, *it);
            break;
        case StridedMethod::naive:
            while (op.next < op.chunks.size() && naive_out < opts.naive_window && backlog.empty() &&
                   post_chunk(op, *it)) {
                op.next++;
                op.outstanding++;
                naive_out++;
            }
            op.all_posted = op.next == op.chunks.size();
            stopped = !op.all_posted;
            break;
        case StridedMethod::hbna:
            while (!op.all_posted && post_hbna_piece(op, *it)) {
            }
            // An operation waiting on its own claim or piece lets the next
            // one take a free slot; with none free, everything waits.
            stopped = !op.all_posted && std::none_of(slots.begin(), slots.end(),
                                                     [](const Slot &s) { return !s.busy; });
            break;
        case StridedMethod::automatic:
            break;
        }
        it = op.all_posted ? waiting.erase(it) : std::next(it);
    }
}

void StridedEngine::Impl::maybe_done(std::uint64_t id) {
    const auto it = ops.find(id);
    if (it == ops.end() || !it->second.all_posted || it->second.outstanding)
        return;
    const Op &op = it->second;
    const StridedDone d{op.tag, op.status, op.status ? 0 : op.bytes, op.method};
    if (op.blocking)
        finished_blocking[id] = d;
    else
        done.push_back(d);
    ops.erase(it);
}

void StridedEngine::Impl::finish_piece(std::uint32_t s, std::int64_t status) {
    Slot &sl = slots[s];
    const std::uint64_t id = sl.op;
    sl.busy = false;
    Op &op = ops.at(id);
    if (status < 0 && !op.status)
        op.status = static_cast<std::int32_t>(status);
    op.outstanding--;
    if (op.status)
        return abandon(id);
    maybe_done(id);
}

// A failed operation starts no more pieces and drops those waiting for
// their turn (the ones still at the card drop once they come back): their
// target buffers are given back with a swap of their flags to 0.
void StridedEngine::Impl::abandon(std::uint64_t id) {
    Op &op = ops.at(id);
    op.all_posted = true;
    for (std::uint32_t s = 0; s < slots.size(); s++) {
        Slot &sl = slots[s];
        if (!sl.busy || sl.op != id || !(sl.ready || sl.replied))
            continue;
        if (sl.ready) {
            const HbnaAddress &a = op.peer.hbna;
            post(make_swap(
                RemoteWord{a.card, a.port, a.flag_rkey, 8, sl.buf * sizeof(std::uint64_t)}, 0,
                tag_of(k_release, s, id)));
        }
        sl.busy = false;
        op.outstanding--;
    }
    maybe_done(id);
}

// The slot of operation id's piece that starts at byte from of its stream,
// if it is in the state want says (ready to send, or replied).
std::optional<std::uint32_t> StridedEngine::Impl::piece_at(std::uint64_t id, std::uint64_t from,
                                                           bool Slot::*want) const {
    for (std::uint32_t s = 0; s < slots.size(); s++)
        if (slots[s].busy && slots[s].op == id && slots[s].*want && slots[s].from == from)
            return s;
    return std::nullopt;
}

void StridedEngine::Impl::send_descs(Op &op, std::uint64_t id) {
    if (op.status)
        return abandon(id);
    while (const auto s = piece_at(id, op.desc_from, &Slot::ready)) {
        Slot &sl = slots[*s];
        const HbnaAddress &a = op.peer.hbna;
        post(make_send(a.card, a.port, desc_mr.handle(), *s * sizeof(HbnaDesc), sizeof(HbnaDesc),
                       desc_msg_tag, tag_of(k_desc, *s, id)));
        sl.ready = false;
        op.desc_from += sl.len;
    }
}

void StridedEngine::Impl::unpack_gets(Op &op, std::uint64_t id) {
    if (op.status)
        return abandon(id);
    while (const auto s = piece_at(id, op.unpack_from, &Slot::replied)) {
        const Slot &sl = slots[*s];
        const std::byte *in = bounce.data() + *s * slot_bytes;
        std::byte *base = op.local->data();
        std::uint64_t at = 0;
        for_each_piece(op.count, op.lside(), sl.from, sl.len,
                       [&](std::uint64_t off, std::uint64_t n) {
                           std::memcpy(base + off, in + at, n);
                           at += n;
                       });
        op.unpack_from += sl.len;
        const bool last = op.all_posted && op.outstanding == 1;
        finish_piece(*s, sl.status);
        if (last)
            return; // op is gone
    }
}

void StridedEngine::Impl::handle(const nicoff_cqe &c) {
    const std::uint64_t id = id_of(c.tag);
    const auto s = static_cast<std::uint32_t>(slot_of(c.tag));
    switch (kind_of(c.tag)) {
    case k_nic:
    case k_naive: {
        Op &op = ops.at(id);
        if (c.status < 0 && !op.status)
            op.status = c.status;
        op.outstanding--;
        if (kind_of(c.tag) == k_naive)
            naive_out--;
        maybe_done(id);
        return;
    }
    case k_cas: {
        Op &op = ops.at(id);
        if (c.status < 0) {
            op.claiming = false;
            return finish_piece(s, c.status);
        }
        if (c.result != 0) {
            // Taken: ask for the next buffer (the target frees them as it unpacks).
            if (++slots[s].tries % op.peer.hbna.buffers == 0)
                std::this_thread::yield();
            return claim(s, id, op);
        }
        op.claiming = false;
        const HbnaAddress &a = op.peer.hbna;
        const Slot &sl = slots[s];
        HbnaDesc &d = descs[s];
        d = {};
        d.kind = static_cast<std::uint32_t>(op.kind);
        d.levels = static_cast<std::uint32_t>(op.count.size() - 1);
        d.buf = sl.buf;
        d.acc = op.acc;
        d.scale = op.scale;
        d.token = c.tag & ~(0xffull << 56);
        d.offset = op.roff;
        std::copy(op.count.begin(), op.count.end(), d.count);
        std::copy(op.rstride.begin(), op.rstride.end(), d.stride);
        d.from = sl.from;
        d.len = sl.len;
        d.reply_rkey = bounce_mr.rkey();
        d.reply_off = s * slot_bytes;
        if (op.kind == Kind::get) {
            slots[s].ready = true;
            send_descs(op, id);
        } else
            // The descriptor follows once the bytes are there (seed 004 Fig. 4's chaining).
            post(make_rdma(NICOFF_OP_PUT, a.card, a.port, a.buf_rkey, sl.buf * a.buffer_bytes,
                           bounce_mr.handle(), s * slot_bytes, sl.len, tag_of(k_put, s, id)));
        return;
    }
    case k_put:
        if (c.status < 0)
            return finish_piece(s, c.status);
        slots[s].ready = true;
        return send_descs(ops.at(id), id);
    case k_desc:
        if (c.status < 0)
            finish_piece(s, c.status);
        return;
    case k_recv: {
        const auto r = static_cast<std::uint32_t>(id_of(c.tag));
        const std::int64_t status = c.status < 0 ? c.status : replies[r];
        post_reply_recv(r);
        if (c.status < 0)
            return;
        const std::uint32_t ps = static_cast<std::uint32_t>(slot_of(c.msg_tag));
        const Slot &sl = slots.at(ps);
        if (!sl.busy || sl.op != id_of(c.msg_tag))
            return;
        Op &op = ops.at(sl.op);
        if (op.kind != Kind::get || status < 0)
            return finish_piece(ps, status);
        slots[ps].replied = true;
        slots[ps].status = status;
        return unpack_gets(op, sl.op);
    }
    default:
        return;
    }
}

bool StridedEngine::Impl::progress() {
    std::array<nicoff_cqe, 64> cqes{};
    bool any = false;
    for (;;) {
        const std::size_t n = port.poll(cqes);
        for (std::size_t k = 0; k < n; k++)
            handle(cqes[k]);
        pump();
        if (n == 0)
            break;
        any = true;
    }
    if (port.in_error())
        throw_errno(EIO, "strided: the port is in the error state");
    return any;
}

void StridedEngine::Impl::wait_some(Clock::time_point deadline) {
    const auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero())
        throw_errno(ETIMEDOUT, "strided: no progress for the timeout");
    port.wait(std::min(std::chrono::duration_cast<std::chrono::milliseconds>(left) +
                           std::chrono::milliseconds(1),
                       std::chrono::milliseconds(10)));
}

StridedDone StridedEngine::Impl::wait_for(std::uint64_t id) {
    auto deadline = Clock::now() + std::chrono::seconds(30);
    for (;;) {
        if (progress())
            deadline = Clock::now() + std::chrono::seconds(30);
        const auto it = finished_blocking.find(id);
        if (it != finished_blocking.end()) {
            const StridedDone d = it->second;
            finished_blocking.erase(it);
            return d;
        }
        wait_some(deadline);
    }
}

StridedEngine::StridedEngine(Port &port, StridedOptions opts)
    : impl_(std::make_unique<Impl>(port, opts)) {}

StridedEngine::~StridedEngine() = default;

void StridedEngine::start_put(StridedMethod m, const MemoryRegion &local, const StridedSide &src,
                              const StridedPeer &peer, const StridedSide &dst,
                              std::span<const std::uint64_t> count, std::uint64_t tag) {
    impl_->start(m, Kind::put, local, src, peer, dst, count, 0, 0, tag, false);
}

void StridedEngine::start_get(StridedMethod m, const StridedPeer &peer, const StridedSide &src,
                              const MemoryRegion &local, const StridedSide &dst,
                              std::span<const std::uint64_t> count, std::uint64_t tag) {
    impl_->start(m, Kind::get, local, dst, peer, src, count, 0, 0, tag, false);
}

void StridedEngine::start_acc(StridedMethod m, std::uint32_t acc, std::int64_t scale,
                              const MemoryRegion &local, const StridedSide &src,
                              const StridedPeer &peer, const StridedSide &dst,
                              std::span<const std::uint64_t> count, std::uint64_t tag) {
    impl_->start(m, Kind::acc, local, src, peer, dst, count, acc, scale, tag, false);
}

// A blocking operation: started as the others, waited for alone.
void StridedEngine::Impl::run(StridedMethod m, Kind kind, const MemoryRegion &local,
                              const StridedSide &lside, const StridedPeer &peer,
                              const StridedSide &rside, std::span<const std::uint64_t> count,
                              std::uint32_t acc, std::int64_t scale) {
    const StridedDone d =
        wait_for(start(m, kind, local, lside, peer, rside, count, acc, scale, 0, true));
    if (d.status < 0)
        throw_errno(-d.status, kind == Kind::put   ? "strided put"
                               : kind == Kind::get ? "strided get"
                                                   : "strided acc");
}

void StridedEngine::put(StridedMethod m, const MemoryRegion &local, const StridedSide &src,
                        const StridedPeer &peer, const StridedSide &dst,
                        std::span<const std::uint64_t> count) {
    impl_->run(m, Kind::put, local, src, peer, dst, count, 0, 0);
}

void StridedEngine::get(StridedMethod m, const StridedPeer &peer, const StridedSide &src,
                        const MemoryRegion &local, const StridedSide &dst,
                        std::span<const std::uint64_t> count) {
    impl_->run(m, Kind::get, local, dst, peer, src, count, 0, 0);
}

void StridedEngine::acc(StridedMethod m, std::uint32_t acc, std::int64_t scale,
                        const MemoryRegion &local, const StridedSide &src, const StridedPeer &peer,
                        const StridedSide &dst, std::span<const std::uint64_t> count) {
    impl_->run(m, Kind::acc, local, src, peer, dst, count, acc, scale);
}

std::size_t StridedEngine::poll(std::span<StridedDone> out) {
    impl_->progress();
    std::size_t n = 0;
    while (n < out.size() && !impl_->done.empty()) {
        out[n++] = impl_->done.front();
        impl_->done.pop_front();
    }
    return n;
}

StridedDone StridedEngine::wait_any(std::chrono::milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    for (;;) {
        if (impl_->progress())
            deadline = Clock::now() + timeout;
        if (!impl_->done.empty()) {
            const StridedDone d = impl_->done.front();
            impl_->done.pop_front();
            return d;
        }
        if (impl_->ops.empty())
            throw_errno(EINVAL, "strided: wait_any with nothing in flight");
        impl_->wait_some(deadline);
    }
}

std::size_t StridedEngine::in_flight() const noexcept { return impl_->ops.size(); }

StridedMethod StridedEngine::resolve(StridedMethod m, std::span<const std::uint64_t> count,
                                     const StridedPeer &peer) {
    if (m != StridedMethod::automatic)
        return m;
    const ShapeSize sz = shape_size(count);
    return model().choose(sz.chunks, sz.bytes, peer.hbna.buffers != 0);
}

const StridedModel &StridedEngine::model() { return impl_->get_model(); }

const StridedModel &StridedEngine::calibrate() { return impl_->measure(); }

void StridedEngine::use_model(const StridedModel &m) { impl_->model = m; }

// ----------------------------------------------------------- calibration --
const StridedModel &StridedEngine::Impl::get_model() {
    if (model)
        return *model;
    const char *env = std::getenv("NICOFF_STRIDED_CALIBRATE");
    if (!(env && std::string_view(env) == "1")) {
        try {
            std::ifstream in(strided_cache_path(port.card()));
            std::stringstream text;
            text << in.rdbuf();
            if (in)
                model = StridedModel::from_text(text.str());
        } catch (const std::system_error &) {
            // No cache directory: measure.
        }
        if (model)
            return *model;
    }
    return measure();
}

// Times each method on this card against a port of its own and a
// StridedTarget in this process, and fits the models' parameters: tn from
// a contiguous 1 MiB put, ts_nic and ts_put from 8-byte chunks (their time
// less tn per byte, per chunk), ts_hbna from a one-chunk HBNA put, tm from
// packing 64-byte chunks on this CPU.
const StridedModel &StridedEngine::Impl::measure() {
    constexpr std::uint64_t size = 2u << 20;
    std::vector<std::byte> src(size), dst(size);
    const MemoryRegion local = port.register_memory(std::span(src), NICOFF_ACCESS_LOCAL_WRITE);
    Port peer_port(port.card(), PortConfig{NICOFF_PORT_ANY, 64, 64});
    const MemoryRegion remote = peer_port.register_memory(
        std::span(dst), NICOFF_ACCESS_REMOTE_WRITE | NICOFF_ACCESS_REMOTE_READ);
    const StridedTarget target(port.card(), std::span(dst), StridedTarget::Options{4, 64 << 10});
    const StridedPeer peer{{peer_port.card(), peer_port.number(), remote.rkey()}, target.address()};
    const auto seconds = [&](StridedMethod m, std::span<const std::uint64_t> count,
                             std::span<const std::uint64_t> stride) {
        std::vector<double> t;
        for (int rep = 0; rep < 4; rep++) {
            const auto t0 = Clock::now();
            wait_for(
                start(m, Kind::put, local, {0, stride}, peer, {0, stride}, count, 0, 0, 0, true));
            t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        }
        std::sort(t.begin() + 1, t.end()); // the first warms up
        return t[2];
    };
    StridedModel m;
    const std::uint64_t big[] = {1u << 20}, none[] = {0};
    m.tn = seconds(StridedMethod::nic, big, none) / static_cast<double>(big[0]);
    const std::uint64_t small[] = {8, 4096}, small_stride[] = {16};
    const double n_small = 8.0 * 4096;
    m.ts_nic =
        std::max(0.0, (seconds(StridedMethod::nic, small, small_stride) - m.tn * n_small) / 4096);
    const std::uint64_t rows[] = {8, 512};
    m.ts_put =
        std::max(0.0, (seconds(StridedMethod::naive, rows, small_stride) - m.tn * 4096) / 512);
    const std::uint64_t one[] = {8};
    m.ts_hbna = seconds(StridedMethod::hbna, one, none);
    const std::uint64_t pack[] = {64, 8192}, pack_stride[] = {128};
    std::vector<std::byte> out(64 * 8192);
    const auto t0 = Clock::now();
    for (int rep = 0; rep < 4; rep++) {
        std::uint64_t at = 0;
        for_each_piece(pack, StridedSide{0, pack_stride}, 0, out.size(),
                       [&](std::uint64_t off, std::uint64_t n) {
                           std::memcpy(out.data() + at, src.data() + off, n);
                           at += n;
                       });
        asm volatile("" : : "r"(out.data()) : "memory");
    }
    m.tm = std::chrono::duration<double>(Clock::now() - t0).count() / (4.0 * out.size());
    model = m;
    try {
        const std::filesystem::path path = strided_cache_path(port.card());
        std::filesystem::create_directories(path.parent_path());
        const std::filesystem::path tmp = path.string() + ".tmp";
        {
            std::ofstream f(tmp);
            f << m.to_text();
        }
        std::filesystem::rename(tmp, path);
    } catch (const std::exception &e) {
        // An unwritable cache costs a calibration next time, nothing more.
        if (debugging(1))
            detail::debug_log("strided: the model's cache: %s", e.what());
    }
    return *model;
}

} // namespace nicoff
