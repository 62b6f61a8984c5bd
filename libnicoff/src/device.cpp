// nicoff::Device: an open card and its QUERY answer.
#include "common.hpp"

#include <fcntl.h>

#include <utility>

namespace nicoff {

namespace detail {

static int query_fd(int fd, DeviceInfo &info) noexcept {
    nicoff_query q{};
    if (int err = do_ioctl(fd, NICOFF_IOC_QUERY, &q))
        return err;
    info.abi_version = q.abi_version;
    info.card = q.card;
    info.num_cards = q.num_cards;
    info.max_ports = q.max_ports;
    info.max_ring_entries = q.max_ring_entries;
    info.max_mrs = q.max_mrs;
    return 0;
}

int open_device(const std::string &path, DeviceInfo &info) {
    int fd;
    do {
        fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0)
        throw_errno(errno, "nicoff: open " + path);
    FileDesc guard(fd);
    if (int err = query_fd(fd, info))
        throw_errno(err, "nicoff: query " + path);
    if (info.abi_version != NICOFF_ABI_VERSION)
        throw_errno(EPROTO, "nicoff: ABI mismatch on " + path + ": kernel speaks " +
                                std::to_string(info.abi_version) + ", library speaks " +
                                std::to_string(NICOFF_ABI_VERSION));
    if (debugging(1))
        debug_log("open %s: fd %d, card %u of %u, ABI %u", path.c_str(), fd, info.card,
                  info.num_cards, info.abi_version);
    guard.fd = -1;
    return fd;
}

} // namespace detail

std::string Device::path_for(unsigned card) { return "/dev/nicoff" + std::to_string(card); }

Device::Device(unsigned card) : Device(path_for(card)) {}

Device::Device(std::string path) : path_(std::move(path)) {
    fd_ = detail::open_device(path_, info_);
}

Device::Device(Device &&other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), info_(other.info_) {}

Device &Device::operator=(Device &&other) noexcept {
    if (this != &other) {
        if (fd_ >= 0)
            ::close(fd_);
        path_ = std::move(other.path_);
        fd_ = std::exchange(other.fd_, -1);
        info_ = other.info_;
    }
    return *this;
}

Device::~Device() {
    if (fd_ < 0)
        return;
    if (detail::debugging(1))
        detail::debug_log("close %s: fd %d", path_.c_str(), fd_);
    ::close(fd_);
}

DeviceInfo Device::query() const {
    if (fd_ < 0)
        detail::throw_errno(EBADF, "nicoff: query on a closed device");
    DeviceInfo info;
    if (int err = detail::query_fd(fd_, info))
        detail::throw_errno(err, "nicoff: query " + path_);
    return info;
}

} // namespace nicoff
