// nicoff::CardMemory, HostMemory and AtomicServer: remote atomics used
// synchronously, executed by the target card or by a server process.
#include "atomic_impl.hpp"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <string>

namespace nicoff {

namespace detail {

namespace {

// An Endpoint's tags (below its owner id): the kind of operation, then a
// sequence number or slot.
constexpr unsigned kind_shift = 40;
constexpr std::uint64_t kind_atomic = 1;
constexpr std::uint64_t kind_put = 2;
constexpr std::uint64_t kind_send = 3;
constexpr std::uint64_t kind_recv = 4;
constexpr std::uint64_t kind_wake = 5;

constexpr std::uint64_t index_mask = (std::uint64_t{1} << kind_shift) - 1;

// Scratch layout, in 8-byte words: put sources, request slots, the reply.
constexpr std::size_t put_base = 0;
constexpr std::size_t send_base = put_base + Endpoint::put_slots;
constexpr std::size_t recv_base = send_base + Endpoint::send_slots * 4;
constexpr std::size_t scratch_words = 512; // one page
static_assert(recv_base + 8 <= scratch_words);

// While an atomic's completion is on the way: spin, then sleep in poll(2),
// looking at least every 10 ms.
constexpr Pacing reply_pacing{.max_sleep = std::chrono::milliseconds(10)};
// While waiting for a slot or for puts in flight: spin, then nap.
constexpr Pacing slot_pacing{.sleep = Pacing::Sleep::nap};

} // namespace

std::uint64_t *alloc_page() {
    return static_cast<std::uint64_t *>(::operator new (4096, std::align_val_t{4096}));
}

void PageDeleter::operator()(std::uint64_t *p) const noexcept {
    ::operator delete (p, std::align_val_t{4096});
}

Endpoint::Endpoint(Port &port, std::chrono::milliseconds timeout, bool host)
    : port_(port), reg_(port.dispatcher(), [this](const nicoff_cqe &c) { on_completion(c); }),
      timeout_(timeout), host_(host), scratch_(alloc_page()) {
    std::memset(scratch_.get(), 0, scratch_words * 8);
    mr_ = port.register_memory(
        std::span<std::byte>(reinterpret_cast<std::byte *>(scratch_.get()), scratch_words * 8),
        NICOFF_ACCESS_LOCAL_WRITE);
}

// Puts in flight read the scratch page: let them finish.  (mr_ goes before
// the page, so nothing the card still holds can reach freed memory.)
Endpoint::~Endpoint() {
    try {
        flush();
    } catch (...) {
    }
}

std::uint64_t Endpoint::make_tag(std::uint64_t kind, std::uint64_t n) const noexcept {
    return reg_.tag(kind << kind_shift | (n & index_mask));
}

// Bookkeeping for puts and sends, and the completion wait() waits for.
void Endpoint::on_completion(const nicoff_cqe &c) noexcept {
    const std::uint64_t local = Dispatcher::local(c.tag);
    const std::uint64_t kind = local >> kind_shift, idx = local & index_mask;
    if (have_ == false && c.tag == want_) {
        got_ = c;
        have_ = true;
    } else if (kind == kind_put && idx < put_slots && put_busy_[idx]) {
        put_busy_[idx] = false;
        puts_out_--;
        if (c.status && !error_)
            error_ = -c.status;
    } else if (kind == kind_wake && wakes_posted_) {
        wakes_posted_--;
        if (c.status && !error_)
            error_ = -c.status;
    } else if (kind == kind_send && idx < send_slots && send_busy_[idx]) {
        send_busy_[idx] = false;
        if (c.status && !error_)
            error_ = -c.status;
    } else if (!error_) {
        error_ = EPROTO; // a late reply after a failed wait
    }
}

void Endpoint::check_error() {
    if (error_) {
        const int e = error_;
        error_ = 0;
        throw_errno(e, "nicoff: a put or send of an earlier operation failed");
    }
}

void Endpoint::await(const std::function<bool()> &done, const Pacing &pacing, const char *what) {
    if (!reg_.dispatcher().wait_until(done, Deadline::after_silence(timeout_), pacing))
        throw_errno(ETIMEDOUT, std::string("nicoff: no completion while waiting for ") + what);
}

void Endpoint::post(const nicoff_cmd &c) {
    if (port_.try_post(c))
        return;
    await([&] { return port_.try_post(c); }, slot_pacing, "room in the command ring");
}

// Spins, then sleeps in poll(2) until the card posts a completion.
nicoff_cqe Endpoint::wait(std::uint64_t tag, const char *what) {
    want_ = tag;
    have_ = false;
    await([this] { return have_; }, reply_pacing, what);
    want_ = 0;
    have_ = false;
    return got_;
}

std::uint64_t Endpoint::atomic(std::uint8_t opcode, const RemoteWord &w, std::uint64_t operand,
                               std::uint64_t compare) {
    check_error();
    if (host_)
        return host_atomic(opcode, w, operand, compare);
    const std::uint64_t tag = make_tag(kind_atomic, ++seq_);
    post(make_atomic(opcode, w, operand, compare, tag));
    const nicoff_cqe c = wait(tag, "an atomic");
    if (c.status)
        throw_errno(-c.status, "nicoff: remote atomic");
    return c.result;
}

std::uint64_t Endpoint::host_atomic(std::uint8_t opcode, const RemoteWord &w, std::uint64_t operand,
                                    std::uint64_t compare) {
    const std::uint64_t recv_tag = make_tag(kind_recv, 0);
    if (reply_lost_)
        throw_errno(EIO, "nicoff: a host atomic's reply went missing; this memory is unusable");
    if (!recv_posted_) {
        post(make_recv(mr_.handle(), recv_base * 8, sizeof(HostReply), NICOFF_ANY, NICOFF_ANY,
                       host_reply_tag, ~0ull, recv_tag));
        recv_posted_ = true;
    }
    send_request(opcode, w, operand, compare, 0);
    nicoff_cqe c;
    try {
        c = wait(recv_tag, "the atomic server's reply");
    } catch (...) {
        reply_lost_ = true; // its late reply would answer the next request
        throw;
    }
    recv_posted_ = false;
    if (c.status)
        throw_errno(-c.status, "nicoff: host atomic reply");
    HostReply rep{};
    std::memcpy(&rep, scratch_.get() + recv_base, sizeof(rep));
    if (c.result != sizeof(rep))
        throw_errno(EPROTO, "nicoff: host atomic reply of the wrong size");
    if (rep.status)
        throw_errno(rep.status < 0 ? -rep.status : EIO, "nicoff: host atomic");
    return rep.old;
}

// The next send slot, once its last SEND has completed; marked busy.
unsigned Endpoint::take_send_slot() {
    if (send_busy_[send_next_])
        await([this] { return !send_busy_[send_next_]; }, slot_pacing, "a send slot");
    const unsigned slot = send_next_;
    send_next_ = (send_next_ + 1) % send_slots;
    send_busy_[slot] = true;
    return slot;
}

// A request to the AtomicServer at (w.card, w.port), from the next free
// request slot; its SEND completes (and frees the slot) in on_completion().
void Endpoint::send_request(std::uint8_t opcode, const RemoteWord &w, std::uint64_t operand,
                            std::uint64_t compare, std::uint16_t flags) {
    const unsigned slot = take_send_slot();
    HostReq req{};
    req.opcode = opcode;
    req.width = static_cast<std::uint8_t>(w.width);
    req.flags = flags;
    req.offset = w.offset;
    req.operand = operand;
    req.compare = compare;
    std::memcpy(scratch_.get() + send_base + slot * 4, &req, sizeof(req));
    post(make_send(w.card, w.port, mr_.handle(), (send_base + slot * 4) * 8, sizeof(req),
                   host_req_tag, make_tag(kind_send, slot)));
}

void Endpoint::put64(const RemoteWord &dst, std::uint64_t value) {
    check_error();
    if (host_) {
        // The peer's server writes it, with no reply (seed 001's host-based
        // locks: every remote access goes through the target's server).
        send_request(NICOFF_OP_FETCH_WRITE, dst, value, 0, host_flag_no_reply);
        return;
    }
    if (put_busy_[put_next_])
        await([this] { return !put_busy_[put_next_]; }, slot_pacing, "a put slot");
    const unsigned slot = put_next_;
    put_next_ = (put_next_ + 1) % put_slots;
    scratch_.get()[put_base + slot] = value;
    put_busy_[slot] = true;
    puts_out_++;
    post(make_rdma(NICOFF_OP_PUT, dst.card, dst.port, dst.rkey, dst.offset, mr_.handle(),
                   (put_base + slot) * 8, 8, make_tag(kind_put, slot)));
}

void Endpoint::prepare_wait() {
    check_error();
    post(make_recv(mr_.handle(), recv_base * 8, 0, NICOFF_ANY, NICOFF_ANY, wake_msg_tag, ~0ull,
                   make_tag(kind_wake, 0)));
    wakes_posted_++;
}

// Spins briefly (the hand-over may be under way), then sleeps until a
// completion arrives: the wake-up message follows the put that changes the
// word, on the same stream.  A wake-up that comes after the word was seen
// to change just completes its RECV later.
// Without a prepared wake-up (nothing can complete to wake us) it only
// spins and looks every 50 us, as RemoteMemory's.
void Endpoint::wait_while(const std::uint64_t *word, std::uint64_t value) {
    while (load_acquire(word) == value) {
        const bool woken = wakes_posted_ != 0;
        Pacing p{.spin = std::chrono::microseconds(20), .max_sleep = std::chrono::milliseconds(10)};
        if (!woken)
            p.sleep = Pacing::Sleep::nap;
        reg_.dispatcher().wait_until(
            [&] { return error_ || load_acquire(word) != value || (woken && !wakes_posted_); },
            Deadline::never(), p);
        check_error();
    }
}

void Endpoint::wake(std::uint32_t card, std::uint32_t port) {
    const unsigned slot = take_send_slot();
    post(make_send(card, port, mr_.handle(), 0, 0, wake_msg_tag, make_tag(kind_send, slot)));
}

// Wake-up RECVs too: their SENDs are on the way, and a completion left
// behind would reach the port's next user.
void Endpoint::flush() {
    auto idle = [this] {
        return !puts_out_ && !wakes_posted_ &&
               std::none_of(send_busy_.begin(), send_busy_.end(), [](bool b) { return b; });
    };
    if (!idle())
        await(idle, slot_pacing, "puts to complete");
    check_error();
}

} // namespace detail

// ------------------------------------------------------------ RemoteMemory --

RemoteMemory::~RemoteMemory() = default;

void RemoteMemory::wait_while(const std::uint64_t *word, std::uint64_t value) {
    detail::Waiter w;
    while (detail::load_acquire(word) == value)
        w.pause();
}

EndpointMemory::EndpointMemory(Port &port, std::chrono::milliseconds timeout, bool host)
    : ep_(std::make_unique<detail::Endpoint>(port, timeout, host)) {}
EndpointMemory::~EndpointMemory() = default;

std::uint64_t EndpointMemory::atomic(std::uint8_t opcode, const RemoteWord &w,
                                     std::uint64_t operand, std::uint64_t compare) {
    return ep_->atomic(opcode, w, operand, compare);
}
void EndpointMemory::put64(const RemoteWord &dst, std::uint64_t value) { ep_->put64(dst, value); }
void EndpointMemory::flush() { ep_->flush(); }

CardMemory::CardMemory(Port &port, std::chrono::milliseconds timeout)
    : EndpointMemory(port, timeout, false) {}

void CardMemory::prepare_wait() { ep_->prepare_wait(); }
void CardMemory::wait_while(const std::uint64_t *word, std::uint64_t value) {
    ep_->wait_while(word, value);
}
void CardMemory::put64_wake(const RemoteWord &dst, std::uint64_t value) {
    ep_->put64(dst, value);
    ep_->wake(dst.card, dst.port);
}

HostMemory::HostMemory(Port &port, std::chrono::milliseconds timeout)
    : EndpointMemory(port, timeout, true) {}

// The word is written by an AtomicServer thread of this process, which
// notifies after every operation.
void HostMemory::wait_while(const std::uint64_t *word, std::uint64_t value) {
    detail::Waiter spin(20'000);
    while (detail::load_acquire(word) == value) {
        if (spin.spinning())
            spin.pause();
        else
            std::atomic_ref<std::uint64_t>(*const_cast<std::uint64_t *>(word))
                .wait(value, std::memory_order_acquire);
    }
}

// ------------------------------------------------------------ AtomicServer --

struct AtomicServer::Impl {
    Port &port;
    std::span<std::byte> mem;
    ServerMode mode;
    std::chrono::microseconds spin;
    // Tags: slot i's receive i, its reply's send reply_bit | i.
    static constexpr std::uint64_t reply_bit = std::uint64_t{1} << 32;
    detail::Registration reg{port.dispatcher(), [this](const nicoff_cqe &c) {
                                 on_completion(c);
                             }};
    std::unique_ptr<std::uint64_t, detail::PageDeleter> buf{detail::alloc_page()};
    MemoryRegion mr;
    unsigned slots = 0; // request i arrives in slot i and is answered from slot i
    Stats stats;
    bool stray = false; // a completion of ours that no slot expects

    static constexpr std::size_t slot_bytes = 64;

    Impl(Port &p, std::span<std::byte> m, ServerMode md, std::chrono::microseconds s)
        : port(p), mem(m), mode(md), spin(s) {
        if (reinterpret_cast<std::uintptr_t>(m.data()) % 8)
            detail::throw_errno(EINVAL, "nicoff: AtomicServer memory must be 8-byte aligned");
        std::memset(buf.get(), 0, 4096);
        mr = port.register_memory(
            std::span<std::byte>(reinterpret_cast<std::byte *>(buf.get()), 4096),
            NICOFF_ACCESS_LOCAL_WRITE);
        // A receive and a send per slot may be outstanding: all fit in the ring.
        slots = std::min<unsigned>(4096 / slot_bytes / 2, port.cmd_entries() / 2);
        if (slots == 0)
            detail::throw_errno(EINVAL, "nicoff: AtomicServer needs a ring of >= 2 entries");
        for (unsigned i = 0; i < slots; i++)
            post_recv(i);
    }

    std::uint64_t req_off(unsigned i) const { return i * slot_bytes; }
    std::uint64_t rep_off(unsigned i) const { return (slots + i) * slot_bytes; }
    std::byte *at(std::uint64_t off) const {
        return reinterpret_cast<std::byte *>(buf.get()) + off;
    }

    void post(const nicoff_cmd &c) {
        detail::Waiter w;
        while (!port.try_post(c)) {
            if (port.in_error())
                detail::throw_errno(EIO, "nicoff: AtomicServer port is in the error state");
            w.pause();
        }
    }

    void post_recv(unsigned i) {
        post(make_recv(mr.handle(), req_off(i), slot_bytes, NICOFF_ANY, NICOFF_ANY,
                       detail::host_req_tag, ~0ull, reg.tag(i)));
    }

    // The operation on our memory, with CPU atomics.
    detail::HostReply execute(const detail::HostReq &r) const {
        detail::HostReply rep{};
        if ((r.width != 4 && r.width != 8) || (r.flags & ~detail::host_flag_no_reply) ||
            r.reserved1 || (r.width == 4 && ((r.operand | r.compare) >> 32)) ||
            (r.opcode != NICOFF_OP_FETCH_ADD && r.opcode != NICOFF_OP_FETCH_WRITE &&
             r.opcode != NICOFF_OP_COMPARE_SWAP)) {
            rep.status = -EINVAL;
            return rep;
        }
        if (r.offset > mem.size() || mem.size() - r.offset < r.width) {
            rep.status = -ERANGE;
            return rep;
        }
        if (r.offset % r.width) {
            rep.status = -EINVAL;
            return rep;
        }
        if (r.width == 8)
            rep.old = apply<std::uint64_t>(r.opcode, mem.data() + r.offset, r.operand, r.compare);
        else
            rep.old = apply<std::uint32_t>(r.opcode, mem.data() + r.offset,
                                           static_cast<std::uint32_t>(r.operand),
                                           static_cast<std::uint32_t>(r.compare));
        return rep;
    }

    template <class T>
    static std::uint64_t apply(std::uint8_t op, std::byte *p, T operand, T compare) {
        std::atomic_ref<T> w(*reinterpret_cast<T *>(p));
        T old;
        switch (op) {
        case NICOFF_OP_FETCH_ADD:
            old = w.fetch_add(operand);
            break;
        case NICOFF_OP_FETCH_WRITE:
            old = w.exchange(operand);
            break;
        default:
            w.compare_exchange_strong(compare, operand);
            old = compare;
            break;
        }
        w.notify_all(); // a thread of this process may sleep on it (HostMemory::wait_while)
        return old;
    }

    // A request arrived in slot i: answer it from slot i.  A malformed one
    // gets -EINVAL; a receive that failed otherwise has nobody to answer.
    void on_request(const nicoff_cqe &c, unsigned i) {
        detail::HostReply rep{};
        if (c.status == 0 && c.result == sizeof(detail::HostReq)) {
            detail::HostReq req{};
            std::memcpy(&req, at(req_off(i)), sizeof(req));
            rep = execute(req);
            stats.requests++;
            if (req.flags & detail::host_flag_no_reply) {
                post_recv(i);
                return;
            }
        } else if (c.status == 0 || c.status == -EMSGSIZE) {
            rep.status = -EINVAL;
        } else {
            post_recv(i);
            return;
        }
        std::memcpy(at(rep_off(i)), &rep, sizeof(rep));
        post(make_send(c.src_card, c.src_port, mr.handle(), rep_off(i), sizeof(rep),
                       detail::host_reply_tag, reg.tag(reply_bit | i)));
    }

    void on_completion(const nicoff_cqe &c) {
        const std::uint64_t local = detail::Dispatcher::local(c.tag);
        const std::uint64_t i = local & ~reply_bit;
        if (i >= slots)
            stray = true;
        else if (c.opcode == NICOFF_OP_RECV && !(local & reply_bit))
            on_request(c, static_cast<unsigned>(i));
        else if (c.opcode == NICOFF_OP_SEND && (local & reply_bit))
            post_recv(static_cast<unsigned>(i)); // the reply went out: the slot is free
        else
            stray = true;
    }

    void check() {
        reg.dispatcher().check();
        if (stray) {
            stray = false;
            detail::throw_errno(EPROTO, "nicoff: AtomicServer: a completion no slot expects");
        }
    }
};

AtomicServer::AtomicServer(Port &port, std::span<std::byte> memory, ServerMode mode,
                           std::chrono::microseconds spin)
    : impl_(std::make_unique<Impl>(port, memory, mode, spin)) {}

AtomicServer::~AtomicServer() = default;

std::size_t AtomicServer::serve_ready() {
    const std::size_t n = impl_->reg.dispatcher().reap();
    impl_->check();
    return n;
}

// poll never sleeps, but yields the CPU between looks once idle for a while,
// so that on few CPUs the card threads it waits for run; spin_block spins
// for `spin` after each request and each sleep.
void AtomicServer::serve(const std::function<bool()> &stop) {
    detail::Pacing p{
        .max_sleep = std::chrono::milliseconds(10), .respin = true, .sleeps = &impl_->stats.sleeps};
    switch (impl_->mode) {
    case ServerMode::poll:
        p.spin = detail::Clock::duration::max();
        break;
    case ServerMode::spin_block:
        p.spin = impl_->spin;
        break;
    case ServerMode::block:
        p.spin = detail::Clock::duration::zero();
        break;
    }
    impl_->reg.dispatcher().wait_until(
        [&] {
            impl_->check();
            return stop();
        },
        detail::Deadline::never(), p);
}

AtomicServer::Stats AtomicServer::stats() const noexcept { return impl_->stats; }
ServerMode AtomicServer::mode() const noexcept { return impl_->mode; }

} // namespace nicoff
