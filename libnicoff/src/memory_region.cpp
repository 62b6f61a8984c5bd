// nicoff::MemoryRegion: REG_MR / DEREG_MR with RAII.
#include "port_impl.hpp"

#include <utility>

namespace nicoff {

MemoryRegion::MemoryRegion() noexcept = default;

MemoryRegion::MemoryRegion(Port &port, std::span<std::byte> bytes, std::uint32_t access) {
    if (!port.impl_)
        detail::throw_errno(EINVAL, "nicoff: register memory on a moved-from port");
    if (bytes.empty() || (access & ~std::uint32_t{NICOFF_ACCESS_ALL}) != 0)
        detail::throw_errno(EINVAL, "nicoff: register memory: empty range or bad access bits");
    nicoff_reg_mr r{};
    r.addr = reinterpret_cast<std::uintptr_t>(bytes.data());
    r.length = bytes.size();
    r.access = access;
    if (int err = detail::do_ioctl(port.impl_->fd->fd, NICOFF_IOC_REG_MR, &r))
        detail::throw_errno(err, "nicoff: register memory");
    if (detail::debugging(1))
        detail::debug_log("port %u: registered %p, %zu bytes, access %#x: handle %u, rkey %#x",
                          port.impl_->number, static_cast<void *>(bytes.data()), bytes.size(),
                          access, r.handle, r.rkey);
    fd_ = port.impl_->fd;
    bytes_ = bytes;
    handle_ = r.handle;
    rkey_ = r.rkey;
    access_ = access;
}

MemoryRegion::MemoryRegion(MemoryRegion &&other) noexcept
    : fd_(std::move(other.fd_)), bytes_(std::exchange(other.bytes_, {})),
      handle_(std::exchange(other.handle_, 0)), rkey_(std::exchange(other.rkey_, 0)),
      access_(std::exchange(other.access_, 0)) {}

MemoryRegion &MemoryRegion::operator=(MemoryRegion &&other) noexcept {
    if (this != &other) {
        MemoryRegion old(std::move(*this)); // deregistered at the end of this scope
        fd_ = std::move(other.fd_);
        bytes_ = std::exchange(other.bytes_, {});
        handle_ = std::exchange(other.handle_, 0);
        rkey_ = std::exchange(other.rkey_, 0);
        access_ = std::exchange(other.access_, 0);
    }
    return *this;
}

MemoryRegion::~MemoryRegion() {
    if (fd_) {
        nicoff_dereg_mr d{};
        d.handle = handle_;
        const int err = detail::do_ioctl(fd_->fd, NICOFF_IOC_DEREG_MR, &d); // nothing to do
        if (err && detail::debugging(1))
            detail::debug_log("deregister handle %u: %s", handle_,
                              std::generic_category().message(err).c_str());
        else if (detail::debugging(1))
            detail::debug_log("deregistered handle %u", handle_);
    }
}

void MemoryRegion::deregister() {
    if (!fd_)
        return;
    MemoryRegion old(std::move(*this));
    nicoff_dereg_mr d{};
    d.handle = old.handle_;
    const int err = detail::do_ioctl(old.fd_->fd, NICOFF_IOC_DEREG_MR, &d);
    old.fd_.reset(); // its destructor must not try again
    if (err)
        detail::throw_errno(err, "nicoff: deregister memory");
    if (detail::debugging(1))
        detail::debug_log("deregistered handle %u", old.handle_);
}

bool MemoryRegion::belongs_to(const Port &port) const noexcept {
    return fd_ && port.impl_ && fd_.get() == port.impl_->fd.get();
}

} // namespace nicoff
