// nicoff::Strided, for_each_chunk() and segments_of(): see <nicoff/strided.hpp>.
#include <nicoff/strided.hpp>

#include "common.hpp"

#include <array>
#include <cerrno>

namespace nicoff {

using detail::throw_errno;

namespace {

void check_shape(std::span<const std::uint64_t> count, const StridedSide &a, const StridedSide &b) {
    if (count.empty() || count.size() > NICOFF_STRIDED_MAX_LEVELS + 1)
        throw_errno(EINVAL, "strided shape: 0 to 8 levels");
    if (a.stride.size() < count.size() - 1 || b.stride.size() < count.size() - 1)
        throw_errno(EINVAL, "strided shape: a stride array shorter than the levels");
}

} // namespace

void for_each_chunk(std::span<const std::uint64_t> count, const StridedSide &local,
                    const StridedSide &remote,
                    const std::function<void(std::uint64_t, std::uint64_t, std::uint64_t)> &fn) {
    check_shape(count, local, remote);
    const std::size_t levels = count.size() - 1;
    for (const std::uint64_t c : count)
        if (!c)
            return;
    std::array<std::uint64_t, NICOFF_STRIDED_MAX_LEVELS + 1> idx{};
    for (;;) {
        std::uint64_t l = local.offset, r = remote.offset;
        for (std::size_t i = 1; i <= levels; i++) {
            l += idx[i] * local.stride[i - 1];
            r += idx[i] * remote.stride[i - 1];
        }
        fn(l, r, count[0]);
        std::size_t i = 1;
        for (; i <= levels; i++) {
            if (++idx[i] < count[i])
                break;
            idx[i] = 0;
        }
        if (i > levels)
            return;
    }
}

Strided::Strided(Port &port) : port_(&port), slots_(port.cmd_entries() + 1) {
    mr_ = port.register_memory(std::as_writable_bytes(std::span(slots_)), 0);
}

Strided::Strided(Strided &&) noexcept = default;
Strided &Strided::operator=(Strided &&) noexcept = default;
Strided::~Strided() = default;

bool Strided::post(std::uint8_t opcode, const MemoryRegion &local, const StridedSide &local_side,
                   const RemoteRegion &remote, const StridedSide &remote_side,
                   std::span<const std::uint64_t> count, std::uint64_t tag, std::uint32_t acc,
                   std::int64_t scale) {
    check_shape(count, local_side, remote_side);
    if (slots_.empty())
        throw_errno(EINVAL, "strided: a moved-from object");
    if (!local.belongs_to(*port_))
        throw_errno(EINVAL, "strided: the local region is not this port's");
    const auto levels = static_cast<std::uint32_t>(count.size() - 1);
    const std::size_t slot = next_;
    nicoff_strided_desc &d = slots_[slot];
    d = {};
    for (std::size_t i = 0; i < count.size(); i++)
        d.count[i] = count[i];
    for (std::size_t i = 0; i < levels; i++) {
        d.local_stride[i] = local_side.stride[i];
        d.remote_stride[i] = remote_side.stride[i];
    }
    d.acc = acc;
    d.scale = scale;
    const nicoff_op_strided op = {
        .dst_card = remote.card,
        .dst_port = remote.port,
        .rkey = remote.rkey,
        .mr = local.handle(),
        .remote_off = remote_side.offset,
        .off = local_side.offset,
        .desc_mr = mr_.handle(),
        .levels = levels,
        .desc_off = slot * sizeof(nicoff_strided_desc),
    };
    return post_cmd(opcode, op, tag);
}

bool Strided::post_cmd(std::uint8_t opcode, const nicoff_op_strided &op, std::uint64_t tag) {
    if (!port_->try_post(make_strided(opcode, op, tag))) {
        if (port_->in_error())
            throw_errno(EIO, "strided: the port is in the error state");
        return false;
    }
    next_ = (next_ + 1) % slots_.size();
    return true;
}

bool Strided::post_vector(std::uint8_t opcode, const MemoryRegion &local,
                          const RemoteRegion &remote, std::span<const Segment> segments,
                          std::uint64_t tag) {
    if (segments.size() > NICOFF_VECTOR_MAX_SEGS)
        throw_errno(EINVAL, "vector: more segments than one command takes");
    if (slots_.empty())
        throw_errno(EINVAL, "vector: a moved-from object");
    if (!local.belongs_to(*port_))
        throw_errno(EINVAL, "vector: the local region is not this port's");
    if (vslots_.empty()) {
        std::vector<VectorSlot> slots(slots_.size());
        vmr_ = port_->register_memory(std::as_writable_bytes(std::span(slots)), 0);
        vslots_ = std::move(slots);
    }
    // Slot next_ of either kind is written only once the command that last named it was taken.
    VectorSlot &v = vslots_[next_];
    for (std::size_t i = 0; i < segments.size(); i++)
        v[i] = {segments[i].local_offset, segments[i].remote_offset, segments[i].bytes};
    const nicoff_op_strided op = {
        .dst_card = remote.card,
        .dst_port = remote.port,
        .rkey = remote.rkey,
        .mr = local.handle(),
        .remote_off = 0,
        .off = 0,
        .desc_mr = vmr_.handle(),
        .segments = static_cast<std::uint32_t>(segments.size()),
        .desc_off = next_ * sizeof(VectorSlot),
    };
    return post_cmd(opcode, op, tag);
}

bool Strided::try_put_vector(const MemoryRegion &local, const RemoteRegion &remote,
                             std::span<const Segment> segments, std::uint64_t tag) {
    return post_vector(NICOFF_OP_PUT_VECTOR, local, remote, segments, tag);
}

bool Strided::try_get_vector(const RemoteRegion &remote, const MemoryRegion &local,
                             std::span<const Segment> segments, std::uint64_t tag) {
    return post_vector(NICOFF_OP_GET_VECTOR, local, remote, segments, tag);
}

std::vector<Segment> segments_of(std::span<const Giov> list, bool put) {
    std::vector<Segment> out;
    for (const Giov &g : list) {
        if (g.src.size() != g.dst.size())
            throw_errno(EINVAL, "vector: a giov's arrays differ in length");
        for (std::size_t i = 0; i < g.src.size(); i++)
            out.push_back(put ? Segment{g.src[i], g.dst[i], g.bytes}
                              : Segment{g.dst[i], g.src[i], g.bytes});
    }
    return out;
}

bool Strided::try_put(const MemoryRegion &local, const StridedSide &src, const RemoteRegion &remote,
                      const StridedSide &dst, std::span<const std::uint64_t> count,
                      std::uint64_t tag) {
    return post(NICOFF_OP_PUT_STRIDED, local, src, remote, dst, count, tag);
}

bool Strided::try_get(const RemoteRegion &remote, const StridedSide &src, const MemoryRegion &local,
                      const StridedSide &dst, std::span<const std::uint64_t> count,
                      std::uint64_t tag) {
    return post(NICOFF_OP_GET_STRIDED, local, dst, remote, src, count, tag);
}

bool Strided::try_acc(std::uint32_t acc, std::int64_t scale, const MemoryRegion &local,
                      const StridedSide &src, const RemoteRegion &remote, const StridedSide &dst,
                      std::span<const std::uint64_t> count, std::uint64_t tag) {
    return post(NICOFF_OP_ACC_STRIDED, local, src, remote, dst, count, tag, acc, scale);
}

} // namespace nicoff
