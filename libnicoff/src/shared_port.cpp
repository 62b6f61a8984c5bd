// nicoff::SharedPort: a Port with one mutex per side.
#include <nicoff/nicoff.hpp>

#include <system_error>
#include <utility>

namespace nicoff {

SharedPort::SharedPort(Port &&port) : port_(std::move(port)) {}

SharedPort::SharedPort(const Device &dev, const PortConfig &cfg) : port_(dev, cfg) {}

bool SharedPort::try_post(const nicoff_cmd &cmd) {
    std::lock_guard lock(post_mu_);
    return port_.try_post(cmd);
}

std::size_t SharedPort::try_post_batch(std::span<const nicoff_cmd> cmds) {
    std::lock_guard lock(post_mu_);
    return port_.try_post_batch(cmds);
}

void SharedPort::post(const nicoff_cmd &cmd) {
    std::lock_guard lock(post_mu_);
    port_.post(cmd);
}

std::size_t SharedPort::post_batch(std::span<const nicoff_cmd> cmds) {
    std::lock_guard lock(post_mu_);
    return port_.post_batch(cmds);
}

std::size_t SharedPort::poll(std::span<nicoff_cqe> out) {
    std::lock_guard lock(poll_mu_);
    return port_.poll(out);
}

bool SharedPort::wait(std::chrono::milliseconds timeout) {
    {
        std::lock_guard lock(poll_mu_);
        if (port_.ready())
            return true;
        if (port_.in_error())
            throw std::system_error(EIO, std::generic_category(),
                                    "nicoff: port is in the error state");
    }
    return port_.wait_fd(timeout);
}

} // namespace nicoff
