// The C API of the strided engine: the card's commands (nicoff::Strided)
// and the methods (nicoff::StridedEngine, nicoff::StridedTarget).
#include "capi.hpp"

#include <nicoff/strided.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <optional>
#include <span>
#include <vector>

using nicoff::capi::guarded;
using nicoff::capi::make_handle;

struct nicoff_strided {
    nicoff::Strided strided;
};

int nicoff_strided_create(nicoff_port *port, nicoff_strided **out) {
    if (!port || !out)
        return -EINVAL;
    return guarded([&] { return make_handle(out, nicoff_strided{nicoff::Strided(port->port)}); });
}

void nicoff_strided_destroy(nicoff_strided *s) { std::unique_ptr<nicoff_strided> owned(s); }

namespace {

// One side of a strided command from ARMCI's arguments.
nicoff::StridedSide strided_side(uint64_t off, const uint64_t *stride, int levels) {
    return {off, std::span<const uint64_t>(stride, stride ? static_cast<std::size_t>(levels) : 0)};
}

bool strided_args(const nicoff_strided *s, const nicoff_mr *mr, const uint64_t *count, int levels) {
    return s && mr && count && levels >= 0 && levels <= NICOFF_STRIDED_MAX_LEVELS;
}

// A strided put or accumulate (opcode; mr's side is the source) or get through s.
int strided_post(nicoff_strided *s, std::uint8_t opcode, const nicoff_mr *mr, uint64_t off,
                 const uint64_t *stride, uint64_t roff, const uint64_t *rstride,
                 const uint64_t *count, int levels, const nicoff::RemoteRegion &remote,
                 uint64_t tag, uint32_t acc = 0, int64_t scale = 0) {
    if (!strided_args(s, mr, count, levels))
        return -EINVAL;
    return guarded([&] {
        const std::span<const uint64_t> c(count, static_cast<std::size_t>(levels) + 1);
        const nicoff::StridedSide local = strided_side(off, stride, levels);
        const nicoff::StridedSide far = strided_side(roff, rstride, levels);
        bool posted;
        if (opcode == NICOFF_OP_GET_STRIDED)
            posted = s->strided.try_get(remote, far, mr->mr, local, c, tag);
        else if (opcode == NICOFF_OP_ACC_STRIDED)
            posted = s->strided.try_acc(acc, scale, mr->mr, local, remote, far, c, tag);
        else
            posted = s->strided.try_put(mr->mr, local, remote, far, c, tag);
        return posted ? 0 : -EAGAIN;
    });
}

} // namespace

int nicoff_put_strided(nicoff_strided *s, const nicoff_mr *src_mr, uint64_t src_off,
                       const uint64_t *src_stride, uint64_t dst_off, const uint64_t *dst_stride,
                       const uint64_t *count, int stride_levels, uint32_t card, uint32_t dst_port,
                       uint32_t rkey, uint64_t tag) {
    return strided_post(s, NICOFF_OP_PUT_STRIDED, src_mr, src_off, src_stride, dst_off, dst_stride,
                        count, stride_levels, {card, dst_port, rkey}, tag);
}

int nicoff_get_strided(nicoff_strided *s, uint64_t src_off, const uint64_t *src_stride,
                       const nicoff_mr *dst_mr, uint64_t dst_off, const uint64_t *dst_stride,
                       const uint64_t *count, int stride_levels, uint32_t card, uint32_t src_port,
                       uint32_t rkey, uint64_t tag) {
    return strided_post(s, NICOFF_OP_GET_STRIDED, dst_mr, dst_off, dst_stride, src_off, src_stride,
                        count, stride_levels, {card, src_port, rkey}, tag);
}

int nicoff_acc_strided(nicoff_strided *s, uint32_t acc, int64_t scale, const nicoff_mr *src_mr,
                       uint64_t src_off, const uint64_t *src_stride, uint64_t dst_off,
                       const uint64_t *dst_stride, const uint64_t *count, int stride_levels,
                       uint32_t card, uint32_t dst_port, uint32_t rkey, uint64_t tag) {
    return strided_post(s, NICOFF_OP_ACC_STRIDED, src_mr, src_off, src_stride, dst_off, dst_stride,
                        count, stride_levels, {card, dst_port, rkey}, tag, acc, scale);
}

namespace {

// A vector put (put) or get through s, the list flattened from ARMCI's form.
int vector_post(nicoff_strided *s, const nicoff_giov *darr, int len, const nicoff_mr *mr, bool put,
                const nicoff::RemoteRegion &remote, uint64_t tag) {
    if (!s || !mr || len < 0 || (len && !darr))
        return -EINVAL;
    return guarded([&] {
        std::vector<nicoff::Giov> list;
        for (const nicoff_giov &g : std::span(darr, static_cast<std::size_t>(len))) {
            if (g.ptr_array_len < 0 || (g.ptr_array_len && (!g.src_off_array || !g.dst_off_array)))
                return -EINVAL;
            const auto n = static_cast<std::size_t>(g.ptr_array_len);
            list.push_back({std::span(g.src_off_array, n), std::span(g.dst_off_array, n), g.bytes});
        }
        const std::vector<nicoff::Segment> segs = nicoff::segments_of(list, put);
        const bool posted = put ? s->strided.try_put_vector(mr->mr, remote, segs, tag)
                                : s->strided.try_get_vector(remote, mr->mr, segs, tag);
        return posted ? 0 : -EAGAIN;
    });
}

} // namespace

int nicoff_put_vector(nicoff_strided *s, const nicoff_giov *darr, int len, const nicoff_mr *src_mr,
                      uint32_t card, uint32_t dst_port, uint32_t rkey, uint64_t tag) {
    return vector_post(s, darr, len, src_mr, true, {card, dst_port, rkey}, tag);
}

int nicoff_get_vector(nicoff_strided *s, const nicoff_giov *darr, int len, const nicoff_mr *dst_mr,
                      uint32_t card, uint32_t src_port, uint32_t rkey, uint64_t tag) {
    return vector_post(s, darr, len, dst_mr, false, {card, src_port, rkey}, tag);
}

// ---------------------------------------------------------------- methods --

struct nicoff_strided_target {
    nicoff::StridedTarget target;
};

struct nicoff_strided_engine {
    nicoff::StridedEngine engine;
};

namespace {

// The C API's method numbers.
struct MethodNumber {
    int number;
    nicoff::StridedMethod method;
};
constexpr std::array<MethodNumber, 4> method_numbers = {{
    {NICOFF_STRIDED_NIC, nicoff::StridedMethod::nic},
    {NICOFF_STRIDED_HBNA, nicoff::StridedMethod::hbna},
    {NICOFF_STRIDED_NAIVE, nicoff::StridedMethod::naive},
    {NICOFF_STRIDED_AUTO, nicoff::StridedMethod::automatic},
}};

std::optional<nicoff::StridedMethod> method_of(int m) noexcept {
    for (const MethodNumber &n : method_numbers)
        if (n.number == m)
            return n.method;
    return std::nullopt;
}

int method_number(nicoff::StridedMethod m) noexcept {
    for (const MethodNumber &n : method_numbers)
        if (n.method == m)
            return n.number;
    return -1;
}

nicoff::HbnaAddress hbna_of(const nicoff_hbna_address &a) {
    return {a.card, a.port, a.buf_rkey, a.flag_rkey, a.buffers, a.buffer_bytes};
}

// A peer from its C form; false for non-zero reserved fields.
bool peer_of(const nicoff_strided_peer *p, nicoff::StridedPeer &out) noexcept {
    if (!p || p->reserved || p->hbna.reserved)
        return false;
    out = {{p->card, p->port, p->rkey}, hbna_of(p->hbna)};
    return true;
}

enum class Kind { put, get, acc };

// A start call's checked arguments: the engine, method, peer and shape.
struct Start {
    nicoff::StridedMethod method{};
    nicoff::StridedPeer peer;
    std::span<const uint64_t> count;
};

bool start_args(const nicoff_strided_engine *e, int method, const nicoff_mr *mr,
                const uint64_t *count, int levels, const nicoff_strided_peer *peer,
                Start &out) noexcept {
    const auto m = method_of(method);
    if (!e || !m || !mr || !count || levels < 0 || levels > NICOFF_STRIDED_MAX_LEVELS ||
        !peer_of(peer, out.peer))
        return false;
    out.method = *m;
    out.count = std::span<const uint64_t>(count, static_cast<std::size_t>(levels) + 1);
    return true;
}

int start_op(nicoff_strided_engine *e, Kind kind, int method, const nicoff_mr *mr, uint64_t loff,
             const uint64_t *lstride, uint64_t roff, const uint64_t *rstride, const uint64_t *count,
             int levels, const nicoff_strided_peer *peer, uint64_t tag, uint32_t acc = 0,
             int64_t scale = 0) {
    Start s;
    if (!start_args(e, method, mr, count, levels, peer, s))
        return -EINVAL;
    return guarded([&] {
        const nicoff::StridedSide local = strided_side(loff, lstride, levels);
        const nicoff::StridedSide far = strided_side(roff, rstride, levels);
        switch (kind) {
        case Kind::put:
            e->engine.start_put(s.method, mr->mr, local, s.peer, far, s.count, tag);
            break;
        case Kind::get:
            e->engine.start_get(s.method, s.peer, far, mr->mr, local, s.count, tag);
            break;
        case Kind::acc:
            e->engine.start_acc(s.method, acc, scale, mr->mr, local, s.peer, far, s.count, tag);
            break;
        }
    });
}

nicoff_strided_done done_of(const nicoff::StridedDone &d) {
    return {d.tag, d.status, static_cast<uint32_t>(method_number(d.method)), d.bytes};
}

} // namespace

int nicoff_strided_target_create(uint32_t card, void *mem, size_t len, uint32_t buffers,
                                 uint64_t buffer_bytes, nicoff_strided_target **out) {
    if (!out || (!mem && len) || (buffers == 0) != (buffer_bytes == 0))
        return -EINVAL;
    return guarded([&] {
        nicoff::StridedTarget::Options opts;
        if (buffers) {
            opts.buffers = buffers;
            opts.buffer_bytes = buffer_bytes;
        }
        const std::span<std::byte> bytes(static_cast<std::byte *>(mem), len);
        *out = new nicoff_strided_target{nicoff::StridedTarget(card, bytes, opts)};
        return 0;
    });
}

void nicoff_strided_target_destroy(nicoff_strided_target *t) {
    std::unique_ptr<nicoff_strided_target> owned(t);
}

int nicoff_strided_target_address(const nicoff_strided_target *t, nicoff_hbna_address *out) {
    if (!t || !out)
        return -EINVAL;
    const nicoff::HbnaAddress a = t->target.address();
    *out = {a.card, a.port, a.buf_rkey, a.flag_rkey, a.buffers, 0, a.buffer_bytes};
    return 0;
}

int nicoff_strided_target_get_stats(const nicoff_strided_target *t,
                                    struct nicoff_strided_target_stats *out) {
    if (!t || !out)
        return -EINVAL;
    const nicoff::StridedTarget::Stats s = t->target.stats();
    *out = {s.pieces, s.bytes, s.unpack_cpu_ns, s.pack_cpu_ns};
    return 0;
}

int nicoff_strided_engine_create(nicoff_port *port, nicoff_strided_engine **out) {
    if (!port || !out)
        return -EINVAL;
    return guarded([&] {
        *out = new nicoff_strided_engine{nicoff::StridedEngine(port->port)};
        return 0;
    });
}

void nicoff_strided_engine_destroy(nicoff_strided_engine *e) {
    std::unique_ptr<nicoff_strided_engine> owned(e);
}

int nicoff_strided_start_put(nicoff_strided_engine *e, int method, const nicoff_mr *src_mr,
                             uint64_t src_off, const uint64_t *src_stride, uint64_t dst_off,
                             const uint64_t *dst_stride, const uint64_t *count, int stride_levels,
                             const nicoff_strided_peer *peer, uint64_t tag) {
    return start_op(e, Kind::put, method, src_mr, src_off, src_stride, dst_off, dst_stride, count,
                    stride_levels, peer, tag);
}

int nicoff_strided_start_get(nicoff_strided_engine *e, int method, uint64_t src_off,
                             const uint64_t *src_stride, const nicoff_mr *dst_mr, uint64_t dst_off,
                             const uint64_t *dst_stride, const uint64_t *count, int stride_levels,
                             const nicoff_strided_peer *peer, uint64_t tag) {
    return start_op(e, Kind::get, method, dst_mr, dst_off, dst_stride, src_off, src_stride, count,
                    stride_levels, peer, tag);
}

int nicoff_strided_start_acc(nicoff_strided_engine *e, int method, uint32_t acc, int64_t scale,
                             const nicoff_mr *src_mr, uint64_t src_off, const uint64_t *src_stride,
                             uint64_t dst_off, const uint64_t *dst_stride, const uint64_t *count,
                             int stride_levels, const nicoff_strided_peer *peer, uint64_t tag) {
    return start_op(e, Kind::acc, method, src_mr, src_off, src_stride, dst_off, dst_stride, count,
                    stride_levels, peer, tag, acc, scale);
}

int nicoff_strided_poll(nicoff_strided_engine *e, nicoff_strided_done *out, int n) {
    if (!e || n < 0 || (n && !out))
        return -EINVAL;
    return guarded([&] {
        std::vector<nicoff::StridedDone> got(static_cast<std::size_t>(n));
        const std::size_t k = e->engine.poll(got);
        for (std::size_t i = 0; i < k; i++)
            out[i] = done_of(got[i]);
        return static_cast<int>(k);
    });
}

int nicoff_strided_wait(nicoff_strided_engine *e, nicoff_strided_done *out, int timeout_ms) {
    if (!e || !out || timeout_ms < 0)
        return -EINVAL;
    return guarded([&] {
        *out = done_of(e->engine.wait_any(std::chrono::milliseconds(timeout_ms)));
        return 0;
    });
}

int nicoff_strided_resolve(nicoff_strided_engine *e, int method, const uint64_t *count,
                           int stride_levels, const nicoff_strided_peer *peer) {
    const auto m = method_of(method);
    nicoff::StridedPeer p;
    if (!e || !m || !count || stride_levels < 0 || stride_levels > NICOFF_STRIDED_MAX_LEVELS ||
        !peer_of(peer, p))
        return -EINVAL;
    return guarded([&] {
        const std::span<const uint64_t> c(count, static_cast<std::size_t>(stride_levels) + 1);
        return method_number(e->engine.resolve(*m, c, p));
    });
}

const char *nicoff_strided_method_name(int method) {
    const auto m = method_of(method);
    // The names are string literals: their views end in a NUL.
    return m ? nicoff::method_name(*m).data() : nullptr;
}
