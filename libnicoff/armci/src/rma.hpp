// libarmci-nicoff: the one-sided transfers every call goes through.
#ifndef NICOFF_ARMCI_RMA_HPP
#define NICOFF_ARMCI_RMA_HPP

#include "state.hpp"

#include <span>

namespace nicoff::armci {

enum class Dir { put, get, acc };

// One strided transfer between local memory at lptr (any memory) and proc's
// at rptr (inside one ARMCI allocation), each side with its strides; a
// put or acc writes proc's side, a get this one's.  acc: the card's
// accumulate type (NICOFF_ACC_INT32 or INT64) and scale.  By
// NICOFF_ARMCI_STRIDED's method: nic on the rma port, the others through
// the strided engine.  Returns the request's id, 0 when the shape moves
// nothing.
std::uint64_t post_strided(Dir dir, void *lptr, std::span<const std::uint64_t> lstride, void *rptr,
                           std::span<const std::uint64_t> rstride,
                           std::span<const std::uint64_t> count, int proc, std::uint32_t acc = 0,
                           std::int64_t scale = 0);
// The same for ARMCI's argument order (src and dst as the call names them).
std::uint64_t strided_call(Dir dir, void *src, int *src_stride, void *dst, int *dst_stride,
                           int *count, int levels, int proc, std::uint32_t acc = 0,
                           std::int64_t scale = 0);
// Blocking form: waits for the request; EIO-like errors come back as the
// completion's errno.
void strided_blocking(Dir dir, void *src, int *src_stride, void *dst, int *dst_stride, int *count,
                      int levels, int proc);
// Non-blocking form: the request goes to hdl (to_handle below).
void strided_nb(Dir dir, void *src, int *src_stride, void *dst, int *dst_stride, int *count,
                int levels, int proc, armci_hdl_t *hdl);
// Waits for request id (0: nothing) and throws its error.
void finish(std::uint64_t id);
// What a handle covers (null for a handle with nothing recorded); EINVAL
// for a null handle.
std::function<bool(const Request &)> covered_by(const armci_hdl_t *hdl);
// Records request id in a handle (nothing when id is 0).
void to_handle(armci_hdl_t *hdl, int proc, std::uint64_t id);

// A vector transfer (PutV, GetV): every segment of the list.
std::uint64_t post_vector(Dir dir, const armci_giov_t *iov, int len, int proc);
// The list's segments after checking it: (src, dst, bytes).
struct Seg {
    void *src;
    void *dst;
    std::uint64_t bytes;
};
std::vector<Seg> giov_segments(const armci_giov_t *iov, int len);

} // namespace nicoff::armci

#endif
