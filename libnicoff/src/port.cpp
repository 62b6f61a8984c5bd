// nicoff::Port: open, map, post, poll, wait.
#include "port_impl.hpp"

#include <poll.h>
#include <sys/mman.h>

#include <algorithm>
#include <climits>
#include <limits>

namespace nicoff {

namespace detail {

Mapping::Mapping(int fd, std::uint64_t offset, std::size_t len) {
    void *p =
        ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(offset));
    if (p == MAP_FAILED)
        throw_errno(errno, "nicoff: mmap ring");
    addr_ = p;
    len_ = len;
}

Mapping::~Mapping() {
    if (addr_)
        ::munmap(addr_, len_);
}

} // namespace detail

namespace {

void check_config(const PortConfig &cfg, std::uint32_t &cmd_entries, std::uint32_t &cq_entries) {
    cmd_entries = cfg.cmd_entries;
    cq_entries = cfg.cq_entries ? cfg.cq_entries : cfg.cmd_entries;
    if (cmd_entries < 2 || !detail::is_pow2(cmd_entries))
        detail::throw_errno(EINVAL, "nicoff: cmd_entries must be a power of two >= 2");
    if (!detail::is_pow2(cq_entries) || cq_entries < cmd_entries)
        detail::throw_errno(EINVAL, "nicoff: cq_entries must be a power of two >= cmd_entries");
}

std::uint32_t clamp_u32(std::size_t n) noexcept {
    return static_cast<std::uint32_t>(std::min<std::size_t>(n, UINT32_MAX));
}

} // namespace

Port::Port(unsigned card, const PortConfig &cfg) : Port(Device(card), cfg) {}

Port::Port(const Device &dev, const PortConfig &cfg) : impl_(std::make_unique<Impl>()) {
    std::uint32_t cmd_entries, cq_entries;
    check_config(cfg, cmd_entries, cq_entries);

    DeviceInfo info;
    impl_->fd = std::make_shared<detail::FileDesc>(detail::open_device(dev.path(), info));
    const int fd = impl_->fd->fd;
    if (info.max_ring_entries && cq_entries > info.max_ring_entries)
        detail::throw_errno(EINVAL, "nicoff: ring larger than the card's max_ring_entries (" +
                                        std::to_string(info.max_ring_entries) + ")");

    nicoff_port_open po{};
    po.abi_version = NICOFF_ABI_VERSION;
    po.port = cfg.port;
    po.cmd_entries = cmd_entries;
    po.cq_entries = cq_entries;
    if (int err = detail::do_ioctl(fd, NICOFF_IOC_PORT_OPEN, &po))
        detail::throw_errno(err, "nicoff: port open on " + dev.path());
    if (po.cmd_size < detail::ring_bytes(cmd_entries, sizeof(nicoff_cmd)) ||
        po.cq_size < detail::ring_bytes(cq_entries, sizeof(nicoff_cqe)))
        detail::throw_errno(EPROTO, "nicoff: kernel ring sizes are too small");

    impl_->cmd_map = detail::Mapping(fd, po.cmd_offset, po.cmd_size);
    impl_->cq_map = detail::Mapping(fd, po.cq_offset, po.cq_size);
    impl_->cmd_hdr = static_cast<nicoff_ring_hdr *>(impl_->cmd_map.addr());
    impl_->cq_hdr = static_cast<nicoff_ring_hdr *>(impl_->cq_map.addr());
    impl_->card = info.card;
    impl_->number = po.port;
    impl_->cmd_entries = cmd_entries;
    impl_->cq_entries = cq_entries;
    if (!impl_->cmd.attach(impl_->cmd_hdr, detail::ring_slots<nicoff_cmd>(impl_->cmd_map.addr()),
                           cmd_entries) ||
        !impl_->cq.attach(impl_->cq_hdr, detail::ring_slots<nicoff_cqe>(impl_->cq_map.addr()),
                          cq_entries))
        detail::throw_errno(EPROTO, "nicoff: kernel ring headers are inconsistent");
    if (detail::debugging(1))
        detail::debug_log("port %u open on card %u (%s, fd %d): rings attached, %u commands at "
                          "offset %#llx, %u completions at offset %#llx",
                          impl_->number, impl_->card, dev.path().c_str(), fd, cmd_entries,
                          static_cast<unsigned long long>(po.cmd_offset), cq_entries,
                          static_cast<unsigned long long>(po.cq_offset));
}

Port::Port(Port &&other) noexcept = default;
Port &Port::operator=(Port &&other) noexcept = default;

Port::~Port() {
    if (impl_ && detail::debugging(1))
        detail::debug_log(
            "port %u on card %u closed: rings unmapped, %llu doorbells", impl_->number, impl_->card,
            static_cast<unsigned long long>(impl_->kicks.load(std::memory_order_relaxed)));
}

// ------------------------------------------------------------ posting side --

// Both sides may ring the doorbell (see detail::cq_side_needs_kick), so the
// count is a real atomic increment; it is paid only next to a system call.
void Port::Impl::kick() noexcept {
    if (detail::do_ioctl(fd->fd, NICOFF_IOC_KICK, 0) == 0)
        kicks.fetch_add(1, std::memory_order_relaxed);
}

void Port::kick() noexcept { impl_->kick(); }

std::size_t Port::try_post_batch(std::span<const nicoff_cmd> cmds) noexcept {
    Impl &p = *impl_;
    if (cmds.empty() || in_error())
        return 0;
    const detail::PostResult r = p.cmd.post(cmds.data(), clamp_u32(cmds.size()));
    if (r.broken)
        p.broken.store(true, std::memory_order_relaxed);
    if (r.kick)
        kick();
    return r.posted;
}

bool Port::try_post(const nicoff_cmd &cmd) noexcept {
    return try_post_batch(std::span<const nicoff_cmd>(&cmd, 1)) == 1;
}

void Port::post(const nicoff_cmd &cmd) {
    if (try_post(cmd))
        return;
    if (in_error())
        detail::throw_errno(EIO, "nicoff: port is in the error state");
    detail::throw_errno(EAGAIN, "nicoff: command ring full");
}

std::size_t Port::post_batch(std::span<const nicoff_cmd> cmds) {
    const std::size_t n = try_post_batch(cmds);
    if (n == 0 && in_error())
        detail::throw_errno(EIO, "nicoff: port is in the error state");
    return n;
}

void Port::nop(std::uint64_t tag) { post(make_nop(tag)); }

void Port::copy(const MemoryRegion &src, std::uint64_t src_off, const MemoryRegion &dst,
                std::uint64_t dst_off, std::uint64_t len, std::uint64_t tag) {
    if (!src.belongs_to(*this) || !dst.belongs_to(*this))
        detail::throw_errno(EINVAL, "nicoff: copy with a region of another port");
    if (src_off > src.size() || len > src.size() - src_off || dst_off > dst.size() ||
        len > dst.size() - dst_off)
        detail::throw_errno(EINVAL, "nicoff: copy range outside its region");
    post(make_copy(src.handle(), src_off, dst.handle(), dst_off, len, tag));
}

namespace {

void check_atomic(const RemoteWord &w, std::uint64_t operand, std::uint64_t compare) {
    if (w.width != 4 && w.width != 8)
        detail::throw_errno(EINVAL, "nicoff: atomic width must be 4 or 8");
    if (w.width == 4 && ((operand | compare) >> 32))
        detail::throw_errno(EINVAL, "nicoff: 32-bit atomic with an operand above 32 bits");
}

} // namespace

void Port::fetch_add(const RemoteWord &w, std::uint64_t value, std::uint64_t tag) {
    check_atomic(w, value, 0);
    post(make_fetch_add(w, value, tag));
}

void Port::swap(const RemoteWord &w, std::uint64_t value, std::uint64_t tag) {
    check_atomic(w, value, 0);
    post(make_swap(w, value, tag));
}

void Port::compare_swap(const RemoteWord &w, std::uint64_t compare, std::uint64_t swap,
                        std::uint64_t tag) {
    check_atomic(w, swap, compare);
    post(make_compare_swap(w, compare, swap, tag));
}

std::uint32_t Port::free_slots() noexcept {
    if (in_error())
        return 0;
    const std::uint32_t n = impl_->cmd.free_slots();
    if (impl_->cmd.broken())
        impl_->broken.store(true, std::memory_order_relaxed);
    return n;
}

// --------------------------------------------------------- completion side --

std::size_t Port::Impl::poll(std::span<nicoff_cqe> out) noexcept {
    const std::uint32_t n = cq.drain(out.data(), clamp_u32(out.size()));
    if (cq.broken())
        broken.store(true, std::memory_order_relaxed);
    else if (n && detail::cq_side_needs_kick(cmd_hdr))
        kick();
    return n;
}

std::size_t Port::poll(std::span<nicoff_cqe> out) noexcept { return impl_->poll(out); }

bool Port::Impl::ready() noexcept {
    const bool r = cq.available() != 0;
    if (cq.broken())
        broken.store(true, std::memory_order_relaxed);
    return r;
}

bool Port::ready() noexcept { return impl_->ready(); }

bool Port::Impl::wait(std::chrono::milliseconds timeout) {
    if (ready())
        return true;
    if (in_error())
        detail::throw_errno(EIO, "nicoff: port is in the error state");
    return wait_fd(timeout);
}

bool Port::wait(std::chrono::milliseconds timeout) { return impl_->wait(timeout); }

detail::Dispatcher &Port::dispatcher() noexcept { return impl_->dispatcher; }

// -------------------------------------------------------------- any thread --

bool Port::Impl::wait_fd(std::chrono::milliseconds timeout) const {
    using clock = std::chrono::steady_clock;
    const bool forever = timeout.count() < 0;
    const clock::time_point deadline = forever ? clock::time_point::max() : clock::now() + timeout;
    for (;;) {
        int ms = -1;
        if (!forever) {
            const auto left =
                std::chrono::ceil<std::chrono::milliseconds>(deadline - clock::now()).count();
            ms = static_cast<int>(std::clamp<decltype(left)>(left, 0, INT_MAX));
        }
        pollfd pfd{fd->fd, POLLIN, 0};
        const int r = ::poll(&pfd, 1, ms);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            detail::throw_errno(errno, "nicoff: poll");
        }
        if (r == 0) {
            if (ms != 0 && !forever && clock::now() < deadline)
                continue; // woke up early: sleep the rest
            return false;
        }
        if (pfd.revents & POLLIN)
            return true;
        if (pfd.revents & (POLLERR | POLLHUP | POLLNVAL))
            detail::throw_errno(EIO, "nicoff: port is in the error state");
    }
}

bool Port::wait_fd(std::chrono::milliseconds timeout) const { return impl_->wait_fd(timeout); }

bool Port::Impl::in_error() const noexcept {
    return broken.load(std::memory_order_relaxed) ||
           ((detail::load_relaxed(&cq_hdr->flags) | detail::load_relaxed(&cmd_hdr->flags)) &
            NICOFF_RING_ERROR) != 0;
}

bool Port::in_error() const noexcept { return impl_->in_error(); }

std::uint64_t Port::kicks() const noexcept { return impl_->kicks.load(std::memory_order_relaxed); }

PortStats Port::stats() const {
    nicoff_port_stats s{};
    if (int err = detail::do_ioctl(impl_->fd->fd, NICOFF_IOC_PORT_STATS, &s))
        detail::throw_errno(err, "nicoff: port stats");
    PortStats out;
    out.cmds = s.cmds;
    out.cqes = s.cqes;
    out.kicks = s.kicks;
    out.bad_cmds = s.bad_cmds;
    out.cq_full = s.cq_full;
    return out;
}

int Port::fd() const noexcept { return impl_->fd->fd; }
std::uint32_t Port::card() const noexcept { return impl_->card; }
std::uint32_t Port::number() const noexcept { return impl_->number; }
std::uint32_t Port::cmd_entries() const noexcept { return impl_->cmd_entries; }
std::uint32_t Port::cq_entries() const noexcept { return impl_->cq_entries; }

MemoryRegion Port::register_memory(std::span<std::byte> bytes, std::uint32_t access) {
    return MemoryRegion(*this, bytes, access);
}

} // namespace nicoff
