// libarmci-nicoff: Put, Get, PutS, GetS, their non-blocking forms, PutV,
// GetV, the handles, Fence and the value calls.
#include "rma.hpp"

#include "handle.hpp"
#include "shape.hpp"

#include <cerrno>
#include <cstring>
#include <system_error>

namespace nicoff::armci {

namespace {

// The largest piece of a contiguous put or get in one command: well below
// the card's largest message.
constexpr std::uint64_t rdma_piece = std::uint64_t{4} << 20;

void check_bytes(int bytes) {
    if (bytes < 0)
        fail(EINVAL, "a negative size (" + std::to_string(bytes) + ")");
}

std::uint64_t contiguous(Dir dir, void *src, void *dst, int bytes, int proc) {
    check_bytes(bytes);
    const std::uint32_t target = proc_of(proc);
    if (bytes == 0)
        return 0;
    State &s = state();
    void *lptr = dir == Dir::put ? src : dst;
    void *rptr = dir == Dir::put ? dst : src;
    const auto len = static_cast<std::uint64_t>(bytes);
    const Place rp = s.remote_place(proc, rptr, len);
    return s.run(target, [&](Request &r) {
        const std::uint64_t count[] = {len};
        const LocalSide ls = s.local_side(r, lptr, count, {}, dir == Dir::get);
        const RemoteRegion &rr = rp.slice->region;
        for (std::uint64_t off = 0; off < len; off += rdma_piece) {
            const nicoff_cmd c = make_rdma(dir == Dir::put ? NICOFF_OP_PUT : NICOFF_OP_GET, rr.card,
                                           rr.port, rr.rkey, rp.offset + off, ls.mr->handle(),
                                           ls.offset + off, std::min(rdma_piece, len - off), r.id);
            s.post(r, [&] { return s.rma->try_post(c); });
        }
    });
}

} // namespace

void finish(std::uint64_t id) {
    if (id == 0)
        return;
    if (const int err = state().wait_id(id))
        fail(-err, "the operation failed");
}

void to_handle(armci_hdl_t *hdl, int proc, std::uint64_t id) {
    if (!hdl)
        fail(EINVAL, "a NULL handle");
    if (id == 0)
        return;
    // A handle used for several targets before a wait covers them all.
    hdl->target = handle_target(hdl->target, hdl->aggregate, proc);
    hdl->aggregate = handle_id(id);
}

std::function<bool(const Request &)> covered_by(const armci_hdl_t *hdl) {
    if (!hdl)
        fail(EINVAL, "a NULL handle");
    if (hdl->aggregate == 0)
        return {};
    const int target = hdl->target;
    const auto hid = static_cast<std::uint32_t>(hdl->aggregate);
    return [target, hid](const Request &r) {
        return covers(target, hid, r.target, r.id);
    };
}

std::uint64_t post_strided(Dir dir, void *lptr, std::span<const std::uint64_t> lstride, void *rptr,
                           std::span<const std::uint64_t> rstride,
                           std::span<const std::uint64_t> count, int proc, std::uint32_t acc,
                           std::int64_t scale) {
    State &s = state();
    const std::uint32_t target = proc_of(proc);
    const std::uint64_t lext = extent(count, lstride), rext = extent(count, rstride);
    if (lext == 0)
        return 0;
    const Place rp = s.remote_place(proc, rptr, rext);
    if (s.engine)
        return s.run(target, [&](Request &r) {
            const LocalSide side = s.local_side(r, lptr, count, lstride, dir == Dir::get, true);
            const MemoryRegion &mr = *side.mr;
            const StridedSide ls{side.offset, side.stride}, rs{rp.offset, rstride};
            const StridedPeer peer{rp.slice->region, rp.slice->hbna};
            StridedEngine &e = *s.engine;
            s.post_engine(r, [&] {
                switch (dir) {
                case Dir::put:
                    return e.start_put(s.method, mr, ls, peer, rs, count, r.id);
                case Dir::get:
                    return e.start_get(s.method, peer, rs, mr, ls, count, r.id);
                case Dir::acc:
                    break;
                }
                e.start_acc(s.method, acc, scale, mr, ls, peer, rs, count, r.id);
            });
        });
    return s.run(target, [&](Request &r) {
        const LocalSide side = s.local_side(r, lptr, count, lstride, dir == Dir::get);
        const MemoryRegion &mr = *side.mr;
        const StridedSide ls{side.offset, side.stride}, rs{rp.offset, rstride};
        const RemoteRegion &rr = rp.slice->region;
        Strided &st = *s.strided;
        s.post(r, [&] {
            switch (dir) {
            case Dir::put:
                return st.try_put(mr, ls, rr, rs, count, r.id);
            case Dir::get:
                return st.try_get(rr, rs, mr, ls, count, r.id);
            case Dir::acc:
                break;
            }
            return st.try_acc(acc, scale, mr, ls, rr, rs, count, r.id);
        });
    });
}

std::uint64_t strided_call(Dir dir, void *src, int *src_stride, void *dst, int *dst_stride,
                           int *count, int levels, int proc, std::uint32_t acc,
                           std::int64_t scale) {
    const Shape sh = make_shape(src_stride, dst_stride, count, levels);
    if (dir == Dir::get)
        return post_strided(dir, dst, sh.dst_stride, src, sh.src_stride, sh.count, proc);
    return post_strided(dir, src, sh.src_stride, dst, sh.dst_stride, sh.count, proc, acc, scale);
}

void strided_blocking(Dir dir, void *src, int *src_stride, void *dst, int *dst_stride, int *count,
                      int levels, int proc) {
    finish(strided_call(dir, src, src_stride, dst, dst_stride, count, levels, proc));
}

void strided_nb(Dir dir, void *src, int *src_stride, void *dst, int *dst_stride, int *count,
                int levels, int proc, armci_hdl_t *hdl) {
    to_handle(hdl, proc, strided_call(dir, src, src_stride, dst, dst_stride, count, levels, proc));
}

std::vector<Seg> giov_segments(const armci_giov_t *iov, int len) {
    if (len < 0 || (len > 0 && !iov))
        fail(EINVAL, "a bad vector list (" + std::to_string(len) + " descriptors)");
    std::vector<Seg> segs;
    for (int i = 0; i < len; i++) {
        const armci_giov_t &d = iov[i];
        if (d.bytes < 0 || d.ptr_array_len < 0 ||
            (d.ptr_array_len > 0 && (!d.src_ptr_array || !d.dst_ptr_array)))
            fail(EINVAL, "vector descriptor " + std::to_string(i) + " is malformed");
        if (d.bytes == 0)
            continue;
        for (int j = 0; j < d.ptr_array_len; j++)
            segs.push_back(
                {d.src_ptr_array[j], d.dst_ptr_array[j], static_cast<std::uint64_t>(d.bytes)});
    }
    return segs;
}

// The local sides are packed into (put) or unpacked from (get) one buffer:
// a list's local pointers may lie anywhere, and one region per command is
// what a vector command takes.  The bounce buffer while it has room, else
// one of the request's own, registered for it.
std::uint64_t post_vector(Dir dir, const armci_giov_t *iov, int len, int proc) {
    State &s = state();
    const std::uint32_t target = proc_of(proc);
    const std::vector<Seg> segs = giov_segments(iov, len);
    std::vector<Place> places;
    std::uint64_t total = 0;
    for (const Seg &g : segs) {
        places.push_back(s.remote_place(proc, dir == Dir::put ? g.dst : g.src, g.bytes));
        total += g.bytes;
    }
    if (segs.empty())
        return 0;
    return s.run(target, [&](Request &r) {
        std::byte *packed = nullptr;
        const MemoryRegion *mr = nullptr;
        std::uint64_t base = 0;
        if (const auto at = s.bounce ? s.bounce->space.take(total) : std::nullopt) {
            r.lease = BounceLease(s.bounce->space, *at, total);
            packed = s.bounce->bytes.data() + *at;
            mr = &s.bounce->mr;
            base = *at;
        } else {
            r.bounce.resize(total);
            packed = r.bounce.data();
            r.temps.push_back(s.rma->register_memory(r.bounce, NICOFF_ACCESS_LOCAL_WRITE));
            mr = &r.temps.back();
        }
        std::uint64_t off = 0;
        if (dir == Dir::put)
            for (const Seg &g : segs) {
                std::memcpy(packed + off, g.src, g.bytes);
                off += g.bytes;
            }
        std::vector<Segment> batch;
        const Slice *slice = nullptr;
        auto flush = [&] {
            if (batch.empty())
                return;
            s.post(r, [&] {
                return dir == Dir::put ? s.strided->try_put_vector(*mr, slice->region, batch, r.id)
                                       : s.strided->try_get_vector(slice->region, *mr, batch, r.id);
            });
            batch.clear();
        };
        off = 0;
        for (std::size_t i = 0; i < segs.size(); i++) {
            if (places[i].slice != slice || batch.size() == NICOFF_VECTOR_MAX_SEGS) {
                flush();
                slice = places[i].slice;
            }
            batch.push_back({base + off, places[i].offset, segs[i].bytes});
            off += segs[i].bytes;
        }
        flush();
        if (dir == Dir::get)
            r.finish = [packed, segs] {
                std::uint64_t o = 0;
                for (const Seg &g : segs) {
                    std::memcpy(g.dst, packed + o, g.bytes);
                    o += g.bytes;
                }
            };
    });
}

} // namespace nicoff::armci

using namespace nicoff::armci;

extern "C" {

int PARMCI_Put(void *src, void *dst, int size, int target) {
    return guarded("ARMCI_Put", [&] { finish(contiguous(Dir::put, src, dst, size, target)); });
}

int PARMCI_Get(void *src, void *dst, int size, int target) {
    return guarded("ARMCI_Get", [&] { finish(contiguous(Dir::get, src, dst, size, target)); });
}

int PARMCI_NbPut(void *src, void *dst, int bytes, int proc, armci_hdl_t *hdl) {
    return guarded("ARMCI_NbPut",
                   [&] { to_handle(hdl, proc, contiguous(Dir::put, src, dst, bytes, proc)); });
}

int PARMCI_NbGet(void *src, void *dst, int bytes, int proc, armci_hdl_t *hdl) {
    return guarded("ARMCI_NbGet",
                   [&] { to_handle(hdl, proc, contiguous(Dir::get, src, dst, bytes, proc)); });
}

int PARMCI_PutS(void *src_ptr, int src_stride_ar[], void *dst_ptr, int dst_stride_ar[], int count[],
                int stride_levels, int proc) {
    return guarded("ARMCI_PutS", [&] {
        strided_blocking(Dir::put, src_ptr, src_stride_ar, dst_ptr, dst_stride_ar, count,
                         stride_levels, proc);
    });
}

int PARMCI_GetS(void *src_ptr, int src_stride_ar[], void *dst_ptr, int dst_stride_ar[], int count[],
                int stride_levels, int proc) {
    return guarded("ARMCI_GetS", [&] {
        strided_blocking(Dir::get, src_ptr, src_stride_ar, dst_ptr, dst_stride_ar, count,
                         stride_levels, proc);
    });
}

int PARMCI_NbPutS(void *src_ptr, int src_stride_ar[], void *dst_ptr, int dst_stride_ar[],
                  int count[], int stride_levels, int proc, armci_hdl_t *hdl) {
    return guarded("ARMCI_NbPutS", [&] {
        strided_nb(Dir::put, src_ptr, src_stride_ar, dst_ptr, dst_stride_ar, count, stride_levels,
                   proc, hdl);
    });
}

int PARMCI_NbGetS(void *src_ptr, int src_stride_ar[], void *dst_ptr, int dst_stride_ar[],
                  int count[], int stride_levels, int proc, armci_hdl_t *hdl) {
    return guarded("ARMCI_NbGetS", [&] {
        strided_nb(Dir::get, src_ptr, src_stride_ar, dst_ptr, dst_stride_ar, count, stride_levels,
                   proc, hdl);
    });
}

int PARMCI_PutV(armci_giov_t *iov, int iov_len, int proc) {
    return guarded("ARMCI_PutV", [&] { finish(post_vector(Dir::put, iov, iov_len, proc)); });
}

int PARMCI_GetV(armci_giov_t *iov, int iov_len, int proc) {
    return guarded("ARMCI_GetV", [&] { finish(post_vector(Dir::get, iov, iov_len, proc)); });
}

int PARMCI_NbPutV(armci_giov_t *iov, int iov_len, int proc, armci_hdl_t *handle) {
    return guarded("ARMCI_NbPutV",
                   [&] { to_handle(handle, proc, post_vector(Dir::put, iov, iov_len, proc)); });
}

int PARMCI_NbGetV(armci_giov_t *iov, int iov_len, int proc, armci_hdl_t *handle) {
    return guarded("ARMCI_NbGetV",
                   [&] { to_handle(handle, proc, post_vector(Dir::get, iov, iov_len, proc)); });
}

// A put completes once the target holds the data, so the flag is written
// only after the data has landed.
int PARMCI_Put_flag(void *src, void *dst, int size, int *flag, int value, int proc) {
    return guarded("ARMCI_Put_flag", [&] {
        finish(contiguous(Dir::put, src, dst, size, proc));
        finish(contiguous(Dir::put, &value, flag, sizeof(value), proc));
    });
}

int PARMCI_PutS_flag(void *src_ptr, int src_stride_ar[], void *dst_ptr, int dst_stride_ar[],
                     int count[], int stride_levels, int *flag, int value, int proc) {
    return guarded("ARMCI_PutS_flag", [&] {
        strided_blocking(Dir::put, src_ptr, src_stride_ar, dst_ptr, dst_stride_ar, count,
                         stride_levels, proc);
        finish(contiguous(Dir::put, &value, flag, sizeof(value), proc));
    });
}

void ARMCI_INIT_HANDLE(armci_hdl_t *hdl) {
    if (hdl) {
        hdl->target = -1;
        hdl->aggregate = 0;
    }
}

// Every handle aggregates here: a handle used again before it is waited on
// covers every request posted on it since (see PARMCI_Wait).
void ARMCI_SET_AGGREGATE_HANDLE(armci_hdl_t *) {}
void ARMCI_UNSET_AGGREGATE_HANDLE(armci_hdl_t *) {}

// Waits for every request to the handle's target posted no later than the
// last one recorded in it: a superset of the handle's own.
int PARMCI_Wait(armci_hdl_t *hdl) {
    return guarded("ARMCI_Wait", [&] {
        if (const auto pick = covered_by(hdl)) {
            hdl->aggregate = 0;
            if (const int err = state().wait(pick))
                fail(-err, "the operation failed");
        }
    });
}

// 0 once the handle's requests are done (as Wait would return), 1 before.
int PARMCI_Test(armci_hdl_t *hdl) {
    bool busy = false;
    if (const int err = guarded("ARMCI_Test", [&] {
            if (const auto pick = covered_by(hdl)) {
                state().progress();
                busy = state().busy(pick);
            }
        }))
        return err;
    return busy ? 1 : PARMCI_Wait(hdl);
}

int PARMCI_WaitProc(int proc) {
    return guarded("ARMCI_WaitProc", [&] {
        const std::uint32_t t = proc_of(proc);
        if (const int err = state().wait([t](const Request &r) { return r.target == t; }))
            fail(-err, "an operation failed");
    });
}

int PARMCI_WaitAll(void) {
    return guarded("ARMCI_WaitAll", [] {
        if (const int err = state().wait_all())
            fail(-err, "an operation failed");
    });
}

// Completion of a put is remote (the target card has written the data),
// so a fence is waiting for what is in flight to proc.
void PARMCI_Fence(int proc) {
    must("ARMCI_Fence", [&] { (void)PARMCI_WaitProc(proc); });
}

void PARMCI_AllFence(void) {
    must("ARMCI_AllFence", [] { (void)PARMCI_WaitAll(); });
}

int PARMCI_PutValueInt(int src, void *dst, int proc) {
    return PARMCI_Put(&src, dst, sizeof(src), proc);
}
int PARMCI_PutValueLong(long src, void *dst, int proc) {
    return PARMCI_Put(&src, dst, sizeof(src), proc);
}
int PARMCI_PutValueFloat(float src, void *dst, int proc) {
    return PARMCI_Put(&src, dst, sizeof(src), proc);
}
int PARMCI_PutValueDouble(double src, void *dst, int proc) {
    return PARMCI_Put(&src, dst, sizeof(src), proc);
}

// The value is on the caller's stack: these complete before returning, and
// the handle has nothing left to wait for.
int PARMCI_NbPutValueInt(int src, void *dst, int proc, armci_hdl_t *) {
    return PARMCI_PutValueInt(src, dst, proc);
}
int PARMCI_NbPutValueLong(long src, void *dst, int proc, armci_hdl_t *) {
    return PARMCI_PutValueLong(src, dst, proc);
}
int PARMCI_NbPutValueFloat(float src, void *dst, int proc, armci_hdl_t *) {
    return PARMCI_PutValueFloat(src, dst, proc);
}
int PARMCI_NbPutValueDouble(double src, void *dst, int proc, armci_hdl_t *) {
    return PARMCI_PutValueDouble(src, dst, proc);
}

} // extern "C"

namespace {

template <class T>
T get_value(void *src, int proc) {
    T v{};
    if (PARMCI_Get(src, &v, sizeof(v), proc))
        MPI_Abort(MPI_COMM_WORLD, EIO); // the value calls cannot report an error
    return v;
}

} // namespace

extern "C" {

int PARMCI_GetValueInt(void *src, int proc) { return get_value<int>(src, proc); }
long PARMCI_GetValueLong(void *src, int proc) { return get_value<long>(src, proc); }
float PARMCI_GetValueFloat(void *src, int proc) { return get_value<float>(src, proc); }
double PARMCI_GetValueDouble(void *src, int proc) { return get_value<double>(src, proc); }

void armci_read_strided(void *ptr, int stride_levels, int stride_arr[], int count[], char *buf) {
    must("armci_read_strided", [&] {
        const Shape sh = make_shape(stride_arr, stride_arr, count, stride_levels);
        if (sh.bytes())
            pack(static_cast<const std::byte *>(ptr), sh.src_stride, sh.count,
                 reinterpret_cast<std::byte *>(buf));
    });
}

void armci_write_strided(void *ptr, int stride_levels, int stride_arr[], int count[], char *buf) {
    must("armci_write_strided", [&] {
        const Shape sh = make_shape(stride_arr, stride_arr, count, stride_levels);
        if (sh.bytes())
            unpack(reinterpret_cast<const std::byte *>(buf), sh.count,
                   static_cast<std::byte *>(ptr), sh.src_stride);
    });
}

void ARMCI_Copy(void *src, void *dst, int size) {
    if (size > 0)
        std::memmove(dst, src, static_cast<std::size_t>(size));
}

} // extern "C"

NICOFF_ARMCI_ALIAS(ARMCI_Put, PARMCI_Put);
NICOFF_ARMCI_ALIAS(ARMCI_Get, PARMCI_Get);
NICOFF_ARMCI_ALIAS(ARMCI_NbPut, PARMCI_NbPut);
NICOFF_ARMCI_ALIAS(ARMCI_NbGet, PARMCI_NbGet);
NICOFF_ARMCI_ALIAS(ARMCI_PutS, PARMCI_PutS);
NICOFF_ARMCI_ALIAS(ARMCI_GetS, PARMCI_GetS);
NICOFF_ARMCI_ALIAS(ARMCI_NbPutS, PARMCI_NbPutS);
NICOFF_ARMCI_ALIAS(ARMCI_NbGetS, PARMCI_NbGetS);
NICOFF_ARMCI_ALIAS(ARMCI_PutV, PARMCI_PutV);
NICOFF_ARMCI_ALIAS(ARMCI_GetV, PARMCI_GetV);
NICOFF_ARMCI_ALIAS(ARMCI_NbPutV, PARMCI_NbPutV);
NICOFF_ARMCI_ALIAS(ARMCI_NbGetV, PARMCI_NbGetV);
NICOFF_ARMCI_ALIAS(ARMCI_Put_flag, PARMCI_Put_flag);
NICOFF_ARMCI_ALIAS(ARMCI_PutS_flag, PARMCI_PutS_flag);
NICOFF_ARMCI_ALIAS(ARMCI_Wait, PARMCI_Wait);
NICOFF_ARMCI_ALIAS(ARMCI_Test, PARMCI_Test);
NICOFF_ARMCI_ALIAS(ARMCI_WaitProc, PARMCI_WaitProc);
NICOFF_ARMCI_ALIAS(ARMCI_WaitAll, PARMCI_WaitAll);
NICOFF_ARMCI_ALIAS(ARMCI_Fence, PARMCI_Fence);
NICOFF_ARMCI_ALIAS(ARMCI_AllFence, PARMCI_AllFence);
NICOFF_ARMCI_ALIAS(ARMCI_PutValueInt, PARMCI_PutValueInt);
NICOFF_ARMCI_ALIAS(ARMCI_PutValueLong, PARMCI_PutValueLong);
NICOFF_ARMCI_ALIAS(ARMCI_PutValueFloat, PARMCI_PutValueFloat);
NICOFF_ARMCI_ALIAS(ARMCI_PutValueDouble, PARMCI_PutValueDouble);
NICOFF_ARMCI_ALIAS(ARMCI_NbPutValueInt, PARMCI_NbPutValueInt);
NICOFF_ARMCI_ALIAS(ARMCI_NbPutValueLong, PARMCI_NbPutValueLong);
NICOFF_ARMCI_ALIAS(ARMCI_NbPutValueFloat, PARMCI_NbPutValueFloat);
NICOFF_ARMCI_ALIAS(ARMCI_NbPutValueDouble, PARMCI_NbPutValueDouble);
NICOFF_ARMCI_ALIAS(ARMCI_GetValueInt, PARMCI_GetValueInt);
NICOFF_ARMCI_ALIAS(ARMCI_GetValueLong, PARMCI_GetValueLong);
NICOFF_ARMCI_ALIAS(ARMCI_GetValueFloat, PARMCI_GetValueFloat);
NICOFF_ARMCI_ALIAS(ARMCI_GetValueDouble, PARMCI_GetValueDouble);
