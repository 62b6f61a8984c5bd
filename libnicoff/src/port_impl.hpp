// Internal: the state behind a nicoff::Port.
#ifndef NICOFF_SRC_PORT_IMPL_HPP
#define NICOFF_SRC_PORT_IMPL_HPP

#include "common.hpp"
#include "dispatch.hpp"
#include "ring.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

namespace nicoff {

namespace detail {

// One mmap()ed ring, unmapped by the destructor.
class Mapping {
public:
    Mapping() = default;
    Mapping(int fd, std::uint64_t offset, std::size_t len);
    Mapping(Mapping &&other) noexcept { swap(other); }
    Mapping &operator=(Mapping &&other) noexcept {
        Mapping tmp(std::move(other));
        swap(tmp);
        return *this;
    }
    ~Mapping();
    void swap(Mapping &other) noexcept {
        std::swap(addr_, other.addr_);
        std::swap(len_, other.len_);
    }
    void *addr() const noexcept { return addr_; }
    std::size_t size() const noexcept { return len_; }

private:
    void *addr_ = nullptr;
    std::size_t len_ = 0;
};

} // namespace detail

struct Port::Impl final : detail::CompletionSource {
    // Declared first so that it is released last, after both unmaps.
    std::shared_ptr<detail::FileDesc> fd;
    detail::Mapping cmd_map;
    detail::Mapping cq_map;
    nicoff_ring_hdr *cmd_hdr = nullptr;
    nicoff_ring_hdr *cq_hdr = nullptr;
    std::uint32_t card = 0;
    std::uint32_t number = 0;
    std::uint32_t cmd_entries = 0;
    std::uint32_t cq_entries = 0;
    // Set by either side when the card's index is insane; read by anyone.
    std::atomic<bool> broken{false};
    std::atomic<std::uint64_t> kicks{0}; // KICK ioctls made, by either side

    // Posting side, on cache lines of its own.
    alignas(64) detail::CmdProducer cmd;

    // Completion side.
    alignas(64) detail::CqConsumer cq;
    detail::Dispatcher dispatcher{*this};

    void kick() noexcept;
    std::size_t poll(std::span<nicoff_cqe> out) noexcept override;
    bool ready() noexcept;
    bool in_error() const noexcept override;
    bool wait(std::chrono::milliseconds timeout) override;
    bool wait_fd(std::chrono::milliseconds timeout) const;
};

} // namespace nicoff

#endif // NICOFF_SRC_PORT_IMPL_HPP
