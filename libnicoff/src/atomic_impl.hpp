// Internal: the engine behind CardMemory and HostMemory, and the wire
// format of host-based atomics (HostMemory <-> AtomicServer).
#ifndef NICOFF_SRC_ATOMIC_IMPL_HPP
#define NICOFF_SRC_ATOMIC_IMPL_HPP

#include "common.hpp"
#include "dispatch.hpp"

#include <nicoff/atomic.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

namespace nicoff::detail {

// Message tags of host-based atomics: "nicoffAQ" and "nicoffAR".
inline constexpr std::uint64_t host_req_tag = 0x6e69636f66664151ull;
inline constexpr std::uint64_t wake_msg_tag = 0x6e69636f6666574bull; // a lock hand-over
inline constexpr std::uint64_t host_reply_tag = 0x6e69636f66664152ull;

// A request that wants no reply (HostMemory::put64).
inline constexpr std::uint16_t host_flag_no_reply = 1;

// A request, as HostMemory sends it (32 bytes).
struct HostReq {
    std::uint8_t opcode; // NICOFF_OP_FETCH_ADD, _FETCH_WRITE, _COMPARE_SWAP
    std::uint8_t width;  // 4 or 8
    std::uint16_t flags; // host_flag_no_reply
    std::uint32_t reserved1;
    std::uint64_t offset; // in the memory the server serves
    std::uint64_t operand;
    std::uint64_t compare;
};
static_assert(sizeof(HostReq) == 32);

// The answer (16 bytes).
struct HostReply {
    std::int32_t status; // 0 or a negative errno
    std::uint32_t reserved;
    std::uint64_t old;
};
static_assert(sizeof(HostReply) == 16);

// A word of this process's memory that others (the card, a server thread)
// write concurrently.
inline std::uint64_t load_acquire(const std::uint64_t *p) noexcept {
    return std::atomic_ref<std::uint64_t>(*const_cast<std::uint64_t *>(p))
        .load(std::memory_order_acquire);
}

std::uint64_t *alloc_page();
struct PageDeleter {
    void operator()(std::uint64_t *p) const noexcept;
};

// A port used synchronously: atomics (by the card, or by an AtomicServer
// through messages) and fire-and-forget 8-byte puts.
class Endpoint {
public:
    static constexpr unsigned put_slots = 32;
    static constexpr unsigned send_slots = 8;

    Endpoint(Port &port, std::chrono::milliseconds timeout, bool host);
    ~Endpoint();
    Endpoint(const Endpoint &) = delete;
    Endpoint &operator=(const Endpoint &) = delete;

    std::uint64_t atomic(std::uint8_t opcode, const RemoteWord &w, std::uint64_t operand,
                         std::uint64_t compare);
    void put64(const RemoteWord &dst, std::uint64_t value);
    void flush();
    // Wake-ups for sleeping waiters: a RECV posted per wait, a 0-byte SEND
    // of wake_msg_tag per hand-over (RemoteMemory::prepare_wait).
    void prepare_wait();
    void wait_while(const std::uint64_t *word, std::uint64_t value);
    void wake(std::uint32_t card, std::uint32_t port);

private:
    std::uint64_t host_atomic(std::uint8_t opcode, const RemoteWord &w, std::uint64_t operand,
                              std::uint64_t compare);
    void on_completion(const nicoff_cqe &c) noexcept;
    // Dispatches until done() holds; ETIMEDOUT after `timeout` without a
    // completion on the port.
    void await(const std::function<bool()> &done, const Pacing &pacing, const char *what);
    unsigned take_send_slot();
    void send_request(std::uint8_t opcode, const RemoteWord &w, std::uint64_t operand,
                      std::uint64_t compare, std::uint16_t flags);
    void post(const nicoff_cmd &c);
    nicoff_cqe wait(std::uint64_t tag, const char *what);
    void check_error();
    std::uint64_t make_tag(std::uint64_t kind, std::uint64_t n) const noexcept;

    Port &port_;
    Registration reg_;
    std::chrono::milliseconds timeout_;
    bool host_;
    std::unique_ptr<std::uint64_t, PageDeleter> scratch_; // before mr_: freed after it
    MemoryRegion mr_;
    std::array<bool, put_slots> put_busy_{};
    std::array<bool, send_slots> send_busy_{};
    unsigned put_next_ = 0, send_next_ = 0, puts_out_ = 0;
    bool recv_posted_ = false;
    bool reply_lost_ = false;   // a wait for a reply failed: replies may be off by one
    unsigned wakes_posted_ = 0; // wake-up RECVs not completed yet
    std::uint64_t seq_ = 0;
    std::uint64_t want_ = 0; // the tag wait() waits for
    bool have_ = false;      // ... and its completion, in got_
    nicoff_cqe got_{};
    int error_ = 0; // errno of a failed put or send, reported by the next call
};

} // namespace nicoff::detail

#endif // NICOFF_SRC_ATOMIC_IMPL_HPP
