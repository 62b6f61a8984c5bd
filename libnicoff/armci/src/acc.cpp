// libarmci-nicoff: AccS, AccV, Acc and their non-blocking forms.
//
// Where each type runs: ARMCI_ACC_INT and ARMCI_ACC_LNG on the target
// card (NICOFF_OP_ACC_STRIDED, 32- and 64-bit elements, the scale an
// integer); the card serves one accumulate at a time, so they never
// interleave.  ARMCI_ACC_FLT, DBL, CPL and DCP in this process: the card
// does no floating point (none in the kernel), so the caller takes the
// target's accumulate lock (a TasLock on a word of the target's memory,
// taken with the card's compare-and-swap), gets the target's patch, adds
// scale times its own and puts the sum back before it unlocks: atomic with
// respect to every other floating-point accumulate to that process.
#include "rma.hpp"
#include "shape.hpp"

#include <cerrno>
#include <complex>
#include <cstring>

namespace nicoff::armci {

namespace {

struct AccType {
    std::uint32_t card; // NICOFF_ACC_INT32/INT64, or NONE: done here
    std::size_t elem;   // bytes of one element
};

AccType acc_type(int datatype) {
    switch (datatype) {
    case ARMCI_ACC_INT:
        return {NICOFF_ACC_INT32, sizeof(int)};
    case ARMCI_ACC_LNG:
        return {NICOFF_ACC_INT64, sizeof(long)};
    case ARMCI_ACC_FLT:
        return {NICOFF_ACC_NONE, sizeof(float)};
    case ARMCI_ACC_DBL:
        return {NICOFF_ACC_NONE, sizeof(double)};
    case ARMCI_ACC_CPL:
        return {NICOFF_ACC_NONE, sizeof(std::complex<float>)};
    case ARMCI_ACC_DCP:
        return {NICOFF_ACC_NONE, sizeof(std::complex<double>)};
    default:
        fail(EINVAL, "unknown accumulate datatype " + std::to_string(datatype));
    }
}

std::int64_t int_scale(int datatype, const void *scale) {
    if (!scale)
        fail(EINVAL, "a NULL scale");
    if (datatype == ARMCI_ACC_INT)
        return *static_cast<const int *>(scale);
    return *static_cast<const long *>(scale);
}

template <class T>
void add_scaled(std::byte *dst, const std::byte *src, std::uint64_t bytes, const void *scale) {
    T s;
    std::memcpy(&s, scale, sizeof(T));
    for (std::uint64_t i = 0; i < bytes; i += sizeof(T)) {
        T d, x;
        std::memcpy(&d, dst + i, sizeof(T));
        std::memcpy(&x, src + i, sizeof(T));
        d += s * x;
        std::memcpy(dst + i, &d, sizeof(T));
    }
}

// dst += scale * src over bytes of the floating-point datatype.
void add_fp(int datatype, std::byte *dst, const std::byte *src, std::uint64_t bytes,
            const void *scale) {
    switch (datatype) {
    case ARMCI_ACC_FLT:
        return add_scaled<float>(dst, src, bytes, scale);
    case ARMCI_ACC_DBL:
        return add_scaled<double>(dst, src, bytes, scale);
    case ARMCI_ACC_CPL:
        return add_scaled<std::complex<float>>(dst, src, bytes, scale);
    default:
        return add_scaled<std::complex<double>>(dst, src, bytes, scale);
    }
}

// The floating-point accumulate of one strided patch, under the target's lock.
void acc_fp(int datatype, const void *scale, void *src, const Shape &sh, void *dst, int proc) {
    if (!scale)
        fail(EINVAL, "a NULL scale");
    State &s = state();
    const std::uint32_t target = proc_of(proc);
    std::vector<std::byte> patch(sh.bytes());
    if (patch.empty())
        return;
    const auto packed = packed_strides(sh.count);
    TasLock lock(*s.mem, s.me, s.acc_lock[target]);
    auto held = lock.guard();
    finish(post_strided(Dir::get, patch.data(), packed, dst, sh.dst_stride, sh.count, proc));
    for_each_chunk(sh.count, {0, sh.src_stride}, {0, packed},
                   [&](std::uint64_t from, std::uint64_t to, std::uint64_t n) {
                       add_fp(datatype, patch.data() + to, static_cast<std::byte *>(src) + from, n,
                              scale);
                   });
    finish(post_strided(Dir::put, patch.data(), packed, dst, sh.dst_stride, sh.count, proc));
}

// AccS: the request's id on the card (0 when done here, or nothing to do).
std::uint64_t acc_strided(int datatype, void *scale, void *src, int *src_stride, void *dst,
                          int *dst_stride, int *count, int levels, int proc) {
    const AccType t = acc_type(datatype);
    const Shape sh = make_shape(src_stride, dst_stride, count, levels);
    if (!sh.count.empty() && sh.count[0] % t.elem)
        fail(EINVAL, "count[0] = " + std::to_string(sh.count[0]) +
                         " bytes is not a whole number of elements");
    if (t.card == NICOFF_ACC_NONE) {
        acc_fp(datatype, scale, src, sh, dst, proc);
        return 0;
    }
    return post_strided(Dir::acc, src, sh.src_stride, dst, sh.dst_stride, sh.count, proc, t.card,
                        int_scale(datatype, scale));
}

// AccV: each segment an accumulate of one contiguous chunk; the integer
// ones all posted before the first is waited for.
void acc_vector(int datatype, void *scale, const armci_giov_t *iov, int len, int proc,
                std::vector<std::uint64_t> &ids) {
    const AccType t = acc_type(datatype);
    const std::vector<Seg> segs = giov_segments(iov, len);
    for (const Seg &g : segs) {
        if (g.bytes % t.elem)
            fail(EINVAL, "a segment of " + std::to_string(g.bytes) +
                             " bytes is not a whole number of elements");
        state().remote_place(proc, g.dst, g.bytes); // all checked before the first moves
    }
    for (const Seg &g : segs) {
        int count = static_cast<int>(g.bytes);
        if (const std::uint64_t id =
                acc_strided(datatype, scale, g.src, nullptr, g.dst, nullptr, &count, 0, proc))
            ids.push_back(id);
    }
}

} // namespace

} // namespace nicoff::armci

using namespace nicoff::armci;

extern "C" {

int PARMCI_AccS(int datatype, void *scale, void *src_ptr, int src_stride_ar[], void *dst_ptr,
                int dst_stride_ar[], int count[], int stride_levels, int proc) {
    return guarded("ARMCI_AccS", [&] {
        finish(acc_strided(datatype, scale, src_ptr, src_stride_ar, dst_ptr, dst_stride_ar, count,
                           stride_levels, proc));
    });
}

// Integer accumulates return at once; floating-point ones are done when
// this returns (the lock is held only inside the call).
int PARMCI_NbAccS(int datatype, void *scale, void *src_ptr, int src_stride_ar[], void *dst_ptr,
                  int dst_stride_ar[], int count[], int stride_levels, int proc, armci_hdl_t *hdl) {
    return guarded("ARMCI_NbAccS", [&] {
        to_handle(hdl, proc,
                  acc_strided(datatype, scale, src_ptr, src_stride_ar, dst_ptr, dst_stride_ar,
                              count, stride_levels, proc));
    });
}

int PARMCI_Acc(int datatype, void *scale, void *src, void *dst, int bytes, int proc) {
    return guarded("ARMCI_Acc", [&] {
        finish(acc_strided(datatype, scale, src, nullptr, dst, nullptr, &bytes, 0, proc));
    });
}

int PARMCI_NbAcc(int datatype, void *scale, void *src, void *dst, int bytes, int proc,
                 armci_hdl_t *hdl) {
    return guarded("ARMCI_NbAcc", [&] {
        to_handle(hdl, proc,
                  acc_strided(datatype, scale, src, nullptr, dst, nullptr, &bytes, 0, proc));
    });
}

int PARMCI_AccV(int datatype, void *scale, armci_giov_t *iov, int iov_len, int proc) {
    return guarded("ARMCI_AccV", [&] {
        std::vector<std::uint64_t> ids;
        acc_vector(datatype, scale, iov, iov_len, proc, ids);
        for (std::uint64_t id : ids)
            finish(id);
    });
}

int PARMCI_NbAccV(int datatype, void *scale, armci_giov_t *iov, int iov_len, int proc,
                  armci_hdl_t *handle) {
    return guarded("ARMCI_NbAccV", [&] {
        std::vector<std::uint64_t> ids;
        acc_vector(datatype, scale, iov, iov_len, proc, ids);
        if (!ids.empty())
            to_handle(handle, proc, ids.back());
    });
}

} // extern "C"

NICOFF_ARMCI_ALIAS(ARMCI_AccS, PARMCI_AccS);
NICOFF_ARMCI_ALIAS(ARMCI_NbAccS, PARMCI_NbAccS);
NICOFF_ARMCI_ALIAS(ARMCI_Acc, PARMCI_Acc);
NICOFF_ARMCI_ALIAS(ARMCI_NbAcc, PARMCI_NbAcc);
NICOFF_ARMCI_ALIAS(ARMCI_AccV, PARMCI_AccV);
NICOFF_ARMCI_ALIAS(ARMCI_NbAccV, PARMCI_NbAccV);
