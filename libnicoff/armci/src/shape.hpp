// libarmci-nicoff: ARMCI's strided arguments checked and turned into the
// strided engine's (unsigned, 64-bit), and the local packing they need.
// No MPI and no card here, so that the host unit tests cover it.
#ifndef NICOFF_ARMCI_SHAPE_HPP
#define NICOFF_ARMCI_SHAPE_HPP

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace nicoff::armci {

// ARMCI's count[levels + 1] (count[0] in bytes) and both stride arrays
// (stride[i - 1]: bytes between level-i blocks).
struct Shape {
    std::vector<std::uint64_t> count;
    std::vector<std::uint64_t> src_stride;
    std::vector<std::uint64_t> dst_stride;
    // The bytes the shape moves; 0 when a count is 0 (nothing to do).
    std::uint64_t bytes() const;
};

// Checks ARMCI's arrays: levels 0 to 8, no negative count or stride, a
// null array only where levels make it unused; EINVAL with a message
// naming what is wrong.
Shape make_shape(const int *src_stride, const int *dst_stride, const int *count, int levels);

// Bytes from a side's first byte to one past its last: count[0] plus
// (count[i] - 1) * stride[i - 1] over the levels (0 if a count is 0);
// EOVERFLOW past 64 bits.
std::uint64_t extent(std::span<const std::uint64_t> count, std::span<const std::uint64_t> stride);

// The strides of the shape packed contiguously, the lowest level fastest.
std::vector<std::uint64_t> packed_strides(std::span<const std::uint64_t> count);

// Copies between a strided side at base and the packed buffer: pack
// (strided to packed) or unpack.
void pack(const std::byte *base, std::span<const std::uint64_t> stride,
          std::span<const std::uint64_t> count, std::byte *packed);
void unpack(const std::byte *packed, std::span<const std::uint64_t> count, std::byte *base,
            std::span<const std::uint64_t> stride);

} // namespace nicoff::armci

#endif
