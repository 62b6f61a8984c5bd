// The C API: thin wrappers that turn exceptions into negative errno values.
#include "common.hpp"

#ifndef NICOFF_VERSION_STRING
#error "the build passes -DNICOFF_VERSION_STRING"
#endif

#include <algorithm>
#include <climits>
#include <cstring>
#include <new>
#include <utility>

struct nicoff_device {
    nicoff::Device dev;
};

struct nicoff_port {
    nicoff::Port port;
};

struct nicoff_mr {
    nicoff::MemoryRegion mr;
};

struct nicoff_job {
    nicoff::Job job;
};

namespace {

// Runs f, mapping every exception to a negative errno value.
template <class F>
int guarded(F &&f) noexcept {
    try {
        return f();
    } catch (const std::system_error &e) {
        const int v = e.code().value();
        return v > 0 ? -v : -EIO;
    } catch (const std::bad_alloc &) {
        return -ENOMEM;
    } catch (...) {
        return -EIO;
    }
}

template <class T, class... Args>
int make_handle(T **out, Args &&...args) {
    *out = std::make_unique<T>(std::forward<Args>(args)...).release();
    return 0;
}

// A port's configuration from its C attributes (NULL: the defaults);
// false for non-zero reserved bits.
bool port_config(const struct nicoff_port_attr *attr, nicoff::PortConfig &cfg) noexcept {
    if (!attr)
        return true;
    if (attr->reserved)
        return false;
    cfg.port = attr->port;
    if (attr->cmd_entries)
        cfg.cmd_entries = attr->cmd_entries;
    cfg.cq_entries = attr->cq_entries;
    return true;
}

// Copies what into msg[0..len), NUL-terminated and truncated to fit.
void copy_message(const char *what, char *msg, size_t len) noexcept {
    if (!msg || len == 0)
        return;
    const size_t n = std::min(std::strlen(what), len - 1);
    std::memcpy(msg, what, n);
    msg[n] = '\0';
}

} // namespace

extern "C" {

const char *nicoff_version(void) { return NICOFF_VERSION_STRING; }

int nicoff_abi_version(void) { return NICOFF_ABI_VERSION; }

int nicoff_device_open_path(const char *path, nicoff_device **out) {
    if (!path || !out || !*path)
        return -EINVAL;
    return guarded(
        [&] { return make_handle(out, nicoff_device{nicoff::Device(std::string(path))}); });
}

int nicoff_device_open(int card, nicoff_device **out) {
    if (card < 0 || !out)
        return -EINVAL;
    return guarded([&] {
        return make_handle(out, nicoff_device{nicoff::Device(static_cast<unsigned>(card))});
    });
}

void nicoff_device_close(nicoff_device *dev) { std::unique_ptr<nicoff_device> owned(dev); }

int nicoff_device_query(const nicoff_device *dev, struct nicoff_query *out) {
    if (!dev || !out)
        return -EINVAL;
    return guarded([&] {
        const nicoff::DeviceInfo i = dev->dev.query();
        *out = {};
        out->abi_version = i.abi_version;
        out->card = i.card;
        out->num_cards = i.num_cards;
        out->max_ports = i.max_ports;
        out->max_ring_entries = i.max_ring_entries;
        out->max_mrs = i.max_mrs;
        return 0;
    });
}

int nicoff_port_create(const nicoff_device *dev, const struct nicoff_port_attr *attr,
                       nicoff_port **out) {
    nicoff::PortConfig cfg;
    if (!dev || !out || !port_config(attr, cfg))
        return -EINVAL;
    return guarded([&] { return make_handle(out, nicoff_port{nicoff::Port(dev->dev, cfg)}); });
}

void nicoff_port_destroy(nicoff_port *port) { std::unique_ptr<nicoff_port> owned(port); }

int nicoff_port_fd(const nicoff_port *port) { return port ? port->port.fd() : -EINVAL; }

int nicoff_port_number(const nicoff_port *port) {
    if (!port)
        return -EINVAL;
    return static_cast<int>(port->port.number() & INT_MAX);
}

int nicoff_port_in_error(const nicoff_port *port) {
    return port ? (port->port.in_error() ? 1 : 0) : -EINVAL;
}

uint64_t nicoff_port_kicks(const nicoff_port *port) { return port ? port->port.kicks() : 0; }

int nicoff_port_get_stats(const nicoff_port *port, struct nicoff_port_stats *out) {
    if (!port || !out)
        return -EINVAL;
    return guarded([&] {
        const nicoff::PortStats s = port->port.stats();
        *out = {};
        out->cmds = s.cmds;
        out->cqes = s.cqes;
        out->kicks = s.kicks;
        out->bad_cmds = s.bad_cmds;
        out->cq_full = s.cq_full;
        return 0;
    });
}

int nicoff_post(nicoff_port *port, const struct nicoff_cmd *cmd) {
    if (!port || !cmd)
        return -EINVAL;
    if (port->port.try_post(*cmd))
        return 0;
    return port->port.in_error() ? -EIO : -EAGAIN;
}

int nicoff_post_batch(nicoff_port *port, const struct nicoff_cmd *cmds, size_t n) {
    if (!port || (!cmds && n))
        return -EINVAL;
    if (n == 0)
        return 0;
    const std::size_t done =
        port->port.try_post_batch(std::span<const nicoff_cmd>(cmds, std::min<size_t>(n, INT_MAX)));
    if (done)
        return static_cast<int>(done);
    return port->port.in_error() ? -EIO : -EAGAIN;
}

int nicoff_post_nop(nicoff_port *port, uint64_t tag) {
    const nicoff_cmd c = nicoff::make_nop(tag);
    return nicoff_post(port, &c);
}

int nicoff_post_copy(nicoff_port *port, uint32_t src_mr, uint64_t src_off, uint32_t dst_mr,
                     uint64_t dst_off, uint64_t len, uint64_t tag) {
    const nicoff_cmd c = nicoff::make_copy(src_mr, src_off, dst_mr, dst_off, len, tag);
    return nicoff_post(port, &c);
}

int nicoff_post_send(nicoff_port *port, uint32_t card, uint32_t dst_port, uint32_t mr, uint64_t off,
                     uint64_t len, uint64_t msg_tag, uint64_t tag) {
    const nicoff_cmd c = nicoff::make_send(card, dst_port, mr, off, len, msg_tag, tag);
    return nicoff_post(port, &c);
}

int nicoff_post_recv(nicoff_port *port, uint32_t mr, uint64_t off, uint64_t len, uint32_t src_card,
                     uint32_t src_port, uint64_t msg_tag, uint64_t tag_mask, uint64_t tag) {
    const nicoff_cmd c =
        nicoff::make_recv(mr, off, len, src_card, src_port, msg_tag, tag_mask, tag);
    return nicoff_post(port, &c);
}

int nicoff_post_put(nicoff_port *port, uint32_t card, uint32_t dst_port, uint32_t rkey,
                    uint64_t remote_off, uint32_t mr, uint64_t off, uint64_t len, uint64_t tag) {
    const nicoff_cmd c =
        nicoff::make_rdma(NICOFF_OP_PUT, card, dst_port, rkey, remote_off, mr, off, len, tag);
    return nicoff_post(port, &c);
}

int nicoff_post_get(nicoff_port *port, uint32_t card, uint32_t dst_port, uint32_t rkey,
                    uint64_t remote_off, uint32_t mr, uint64_t off, uint64_t len, uint64_t tag) {
    const nicoff_cmd c =
        nicoff::make_rdma(NICOFF_OP_GET, card, dst_port, rkey, remote_off, mr, off, len, tag);
    return nicoff_post(port, &c);
}

int nicoff_poll(nicoff_port *port, struct nicoff_cqe *cqes, size_t max) {
    if (!port || (!cqes && max))
        return -EINVAL;
    const std::size_t n =
        port->port.poll(std::span<nicoff_cqe>(cqes, std::min<size_t>(max, INT_MAX)));
    if (n == 0 && port->port.in_error())
        return -EIO;
    return static_cast<int>(n);
}

int nicoff_wait(nicoff_port *port, int timeout_ms) {
    if (!port)
        return -EINVAL;
    return guarded([&] { return port->port.wait(std::chrono::milliseconds(timeout_ms)) ? 1 : 0; });
}

int nicoff_mr_reg(nicoff_port *port, void *addr, size_t len, uint32_t access, nicoff_mr **out) {
    if (!port || !addr || !len || !out)
        return -EINVAL;
    return guarded([&] {
        auto bytes = std::span<std::byte>(static_cast<std::byte *>(addr), len);
        return make_handle(out, nicoff_mr{nicoff::MemoryRegion(port->port, bytes, access)});
    });
}

int nicoff_mr_dereg(nicoff_mr *mr) {
    if (!mr)
        return -EINVAL;
    std::unique_ptr<nicoff_mr> owned(mr);
    return guarded([&] {
        owned->mr.deregister();
        return 0;
    });
}

uint32_t nicoff_mr_handle(const nicoff_mr *mr) { return mr ? mr->mr.handle() : 0; }

uint32_t nicoff_mr_rkey(const nicoff_mr *mr) { return mr ? mr->mr.rkey() : 0; }

int nicoff_job_from_env(nicoff_job **out, char *msg, size_t msg_len) {
    copy_message("", msg, msg_len);
    if (!out) {
        copy_message("nicoff: nicoff_job_from_env: out is NULL", msg, msg_len);
        return -EINVAL;
    }
    try {
        *out = std::make_unique<nicoff_job>(nicoff_job{nicoff::Job::from_env()}).release();
        return 0;
    } catch (const std::system_error &e) {
        copy_message(e.what(), msg, msg_len);
        const int v = e.code().value();
        return v > 0 ? -v : -EIO;
    } catch (const std::bad_alloc &) {
        copy_message("nicoff: out of memory", msg, msg_len);
        return -ENOMEM;
    } catch (...) {
        copy_message("nicoff: unexpected error", msg, msg_len);
        return -EIO;
    }
}

void nicoff_job_free(nicoff_job *job) { std::unique_ptr<nicoff_job> owned(job); }

int nicoff_job_rank(const nicoff_job *job) {
    return job ? static_cast<int>(job->job.rank()) : -EINVAL;
}

int nicoff_job_size(const nicoff_job *job) {
    return job ? static_cast<int>(job->job.size()) : -EINVAL;
}

int nicoff_job_nics(const nicoff_job *job) {
    return job ? static_cast<int>(job->job.nics()) : -EINVAL;
}

int nicoff_job_port_base(const nicoff_job *job) {
    return job ? static_cast<int>(job->job.port_base()) : -EINVAL;
}

const char *nicoff_job_id(const nicoff_job *job) { return job ? job->job.id().c_str() : nullptr; }

int nicoff_job_card_of(const nicoff_job *job, int rank) {
    if (!job || rank < 0 || static_cast<uint32_t>(rank) >= job->job.size())
        return -EINVAL;
    return static_cast<int>(job->job.card_of(static_cast<uint32_t>(rank)));
}

int nicoff_job_port_of(const nicoff_job *job, int rank) {
    if (!job || rank < 0 || static_cast<uint32_t>(rank) >= job->job.size())
        return -EINVAL;
    return static_cast<int>(job->job.port_of(static_cast<uint32_t>(rank)));
}

int nicoff_job_open_port(const nicoff_job *job, const struct nicoff_port_attr *attr,
                         nicoff_port **out) {
    nicoff::PortConfig cfg;
    if (!job || !out || !port_config(attr, cfg))
        return -EINVAL;
    return guarded([&] { return make_handle(out, nicoff_port{job->job.open_port(cfg)}); });
}

} // extern "C"
