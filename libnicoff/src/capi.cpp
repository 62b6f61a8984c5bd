// The C API: thin wrappers that turn exceptions into negative errno values.
#include "capi.hpp"
#include "common.hpp"

#include <nicoff/strided.hpp>

#include <algorithm>
#include <climits>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

struct nicoff_device {
    nicoff::Device dev;
};

struct nicoff_job {
    nicoff::Job job;
};

struct nicoff_group {
    nicoff::Group group;
};

struct nicoff_host_barrier {
    nicoff::HostBarrier barrier;
};

struct nicoff_bcast_req {
    nicoff::BcastRequest req;
};

struct nicoff_host_bcast {
    nicoff::HostBroadcast bcast;
};

namespace {

using nicoff::capi::guarded;
using nicoff::capi::make_handle;

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

// A group's configuration from its C attributes (NULL: the defaults);
// false for non-zero reserved fields and flags it does not know or that do
// not go with the algorithm.
bool group_config(const struct nicoff_group_attr *attr, nicoff::GroupConfig &cfg) noexcept {
    if (!attr)
        return true;
    if (attr->reserved0 || attr->reserved[0] || (attr->flags & ~NICOFF_GROUP_F_ALL) ||
        ((attr->flags & NICOFF_GROUP_F_HOST_TRIALS) && attr->algorithm != NICOFF_BARRIER_AUTO))
        return false;
    cfg.host_trials = attr->flags & NICOFF_GROUP_F_HOST_TRIALS;
    cfg.algorithm = attr->algorithm;
    cfg.param = attr->param;
    cfg.bcast_channels = attr->bcast_channels;
    cfg.bcast_flags = attr->bcast_flags;
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

// The kernel's answer as it came (it fills every field, reserved ones
// zero), rather than through DeviceInfo and back field by field.
int nicoff_device_query(const nicoff_device *dev, struct nicoff_query *out) {
    if (!dev || !out)
        return -EINVAL;
    return -nicoff::detail::do_ioctl(dev->dev.fd(), NICOFF_IOC_QUERY, out);
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

// As nicoff_device_query(): the kernel's answer as it came.
int nicoff_port_get_stats(const nicoff_port *port, struct nicoff_port_stats *out) {
    if (!port || !out)
        return -EINVAL;
    return -nicoff::detail::do_ioctl(port->port.fd(), NICOFF_IOC_PORT_STATS, out);
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

namespace {

int post_atomic(nicoff_port *port, std::uint8_t opcode, uint32_t card, uint32_t dst_port,
                uint32_t rkey, uint64_t remote_off, uint32_t width, uint64_t operand,
                uint64_t compare, uint64_t tag) {
    const nicoff::RemoteWord w{card, dst_port, rkey, width, remote_off};
    const nicoff_cmd c = nicoff::make_atomic(opcode, w, operand, compare, tag);
    return nicoff_post(port, &c);
}

} // namespace

int nicoff_post_fetch_add(nicoff_port *port, uint32_t card, uint32_t dst_port, uint32_t rkey,
                          uint64_t remote_off, uint32_t width, uint64_t value, uint64_t tag) {
    return post_atomic(port, NICOFF_OP_FETCH_ADD, card, dst_port, rkey, remote_off, width, value, 0,
                       tag);
}

int nicoff_post_swap(nicoff_port *port, uint32_t card, uint32_t dst_port, uint32_t rkey,
                     uint64_t remote_off, uint32_t width, uint64_t value, uint64_t tag) {
    return post_atomic(port, NICOFF_OP_FETCH_WRITE, card, dst_port, rkey, remote_off, width, value,
                       0, tag);
}

int nicoff_post_compare_swap(nicoff_port *port, uint32_t card, uint32_t dst_port, uint32_t rkey,
                             uint64_t remote_off, uint32_t width, uint64_t compare, uint64_t swap,
                             uint64_t tag) {
    return post_atomic(port, NICOFF_OP_COMPARE_SWAP, card, dst_port, rkey, remote_off, width, swap,
                       compare, tag);
}

int nicoff_post_ping(nicoff_port *port, uint32_t card, uint32_t dst_port, uint64_t tag) {
    const nicoff_cmd c = nicoff::make_ping(card, dst_port, tag);
    return nicoff_post(port, &c);
}

int nicoff_post_strided(nicoff_port *port, uint8_t opcode, const struct nicoff_op_strided *op,
                        uint64_t tag) {
    if (!op || (opcode != NICOFF_OP_PUT_STRIDED && opcode != NICOFF_OP_GET_STRIDED &&
                opcode != NICOFF_OP_ACC_STRIDED))
        return -EINVAL;
    const nicoff_cmd c = nicoff::make_strided(opcode, *op, tag);
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
    return guarded([&] { owned->mr.deregister(); });
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

int nicoff_group_create(nicoff_port *port, const struct nicoff_member *members, uint32_t size,
                        uint32_t rank, uint32_t group_id, uint32_t algorithm, uint32_t param,
                        nicoff_group **out) {
    if (!port || !members || !size || !out)
        return -EINVAL;
    nicoff::GroupConfig cfg;
    cfg.algorithm = algorithm;
    cfg.param = param;
    return guarded([&] {
        return make_handle(out, nicoff_group{nicoff::Group(
                                    port->port, std::span<const nicoff_member>(members, size), rank,
                                    group_id, cfg)});
    });
}

int nicoff_group_create_job(nicoff_port *port, const nicoff_job *job, uint32_t algorithm,
                            uint32_t param, nicoff_group **out) {
    if (!port || !job || !out)
        return -EINVAL;
    nicoff::GroupConfig cfg;
    cfg.algorithm = algorithm;
    cfg.param = param;
    return guarded(
        [&] { return make_handle(out, nicoff_group{nicoff::Group(port->port, job->job, cfg)}); });
}

int nicoff_group_create_attr(nicoff_port *port, const struct nicoff_member *members, uint32_t size,
                             uint32_t rank, uint32_t group_id, const struct nicoff_group_attr *attr,
                             nicoff_group **out) {
    nicoff::GroupConfig cfg;
    if (!port || !members || !size || !out || !group_config(attr, cfg))
        return -EINVAL;
    return guarded([&] {
        return make_handle(out, nicoff_group{nicoff::Group(
                                    port->port, std::span<const nicoff_member>(members, size), rank,
                                    group_id, cfg)});
    });
}

int nicoff_group_create_job_attr(nicoff_port *port, const nicoff_job *job,
                                 const struct nicoff_group_attr *attr, nicoff_group **out) {
    nicoff::GroupConfig cfg;
    if (!port || !job || !out || !group_config(attr, cfg))
        return -EINVAL;
    return guarded(
        [&] { return make_handle(out, nicoff_group{nicoff::Group(port->port, job->job, cfg)}); });
}

int nicoff_group_broadcast(nicoff_group *group, const nicoff_mr *mr, uint64_t off, uint64_t len,
                           uint32_t root) {
    if (!group || !group->group.valid() || !mr)
        return -EINVAL;
    return guarded([&] { group->group.broadcast(mr->mr, off, len, root); });
}

int nicoff_group_broadcast_buf(nicoff_group *group, void *buf, size_t len, uint32_t root) {
    if (!group || !group->group.valid() || (!buf && len))
        return -EINVAL;
    return guarded([&] {
        group->group.broadcast(std::span<std::byte>(static_cast<std::byte *>(buf), len), root);
    });
}

int nicoff_group_broadcast_start(nicoff_group *group, const nicoff_mr *mr, uint64_t off,
                                 uint64_t len, uint32_t root, nicoff_bcast_req **out) {
    if (!group || !group->group.valid() || !mr || !out)
        return -EINVAL;
    return guarded([&] {
        return make_handle(out,
                           nicoff_bcast_req{group->group.start_broadcast(mr->mr, off, len, root)});
    });
}

int nicoff_group_broadcast_start_buf(nicoff_group *group, void *buf, size_t len, uint32_t root,
                                     nicoff_bcast_req **out) {
    if (!group || !group->group.valid() || (!buf && len) || !out)
        return -EINVAL;
    return guarded([&] {
        const std::span<std::byte> b(static_cast<std::byte *>(buf), len);
        return make_handle(out, nicoff_bcast_req{group->group.start_broadcast(b, root)});
    });
}

int nicoff_bcast_wait(nicoff_bcast_req *req) {
    if (!req)
        return -EINVAL;
    std::unique_ptr<nicoff_bcast_req> owned(req);
    return guarded([&] { owned->req.wait(); });
}

int nicoff_bcast_test(nicoff_bcast_req *req) {
    if (!req || !req->req.valid())
        return -EINVAL;
    return guarded([&] { return req->req.test() ? 1 : 0; });
}

void nicoff_bcast_free(nicoff_bcast_req *req) { std::unique_ptr<nicoff_bcast_req> owned(req); }

int nicoff_host_bcast_create(nicoff_port *port, const struct nicoff_member *members, uint32_t size,
                             uint32_t rank, nicoff_host_bcast **out) {
    if (!port || !members || !size || !out)
        return -EINVAL;
    return guarded([&] {
        return make_handle(out,
                           nicoff_host_bcast{nicoff::HostBroadcast(
                               port->port, std::span<const nicoff_member>(members, size), rank)});
    });
}

int nicoff_host_broadcast(nicoff_host_bcast *bcast, const nicoff_mr *mr, uint64_t off, uint64_t len,
                          uint32_t root) {
    if (!bcast || !mr)
        return -EINVAL;
    return guarded([&] { bcast->bcast.broadcast(mr->mr, off, len, root); });
}

int nicoff_host_broadcast_buf(nicoff_host_bcast *bcast, void *buf, size_t len, uint32_t root) {
    if (!bcast || (!buf && len))
        return -EINVAL;
    return guarded([&] {
        bcast->bcast.broadcast(std::span<std::byte>(static_cast<std::byte *>(buf), len), root);
    });
}

void nicoff_host_bcast_free(nicoff_host_bcast *bcast) {
    std::unique_ptr<nicoff_host_bcast> owned(bcast);
}

int nicoff_group_barrier(nicoff_group *group) {
    if (!group || !group->group.valid())
        return -EINVAL;
    return guarded([&] { group->group.barrier(); });
}

int nicoff_group_algorithm(const nicoff_group *group) {
    return group ? static_cast<int>(group->group.algorithm()) : -EINVAL;
}

int nicoff_group_param(const nicoff_group *group) {
    return group ? static_cast<int>(group->group.param()) : -EINVAL;
}

int nicoff_group_destroy(nicoff_group *group) {
    std::unique_ptr<nicoff_group> owned(group);
    if (!group)
        return 0;
    return guarded([&] { group->group.destroy(); });
}

int nicoff_host_barrier_create(nicoff_port *port, const struct nicoff_member *members,
                               uint32_t size, uint32_t rank, uint32_t algorithm, uint32_t param,
                               nicoff_host_barrier **out) {
    if (!port || !members || !size || !out)
        return -EINVAL;
    return guarded([&] {
        return make_handle(out, nicoff_host_barrier{nicoff::HostBarrier(
                                    port->port, std::span<const nicoff_member>(members, size), rank,
                                    algorithm, param)});
    });
}

int nicoff_host_barrier_wait(nicoff_host_barrier *barrier) {
    if (!barrier)
        return -EINVAL;
    return guarded([&] { barrier->barrier.barrier(); });
}

void nicoff_host_barrier_free(nicoff_host_barrier *barrier) {
    std::unique_ptr<nicoff_host_barrier> owned(barrier);
}

} // extern "C"

// ------------------------------------------------- atomics and locks --

struct nicoff_rmem {
    std::unique_ptr<nicoff::RemoteMemory> mem;
};

struct nicoff_lock {
    std::unique_ptr<nicoff::McsLock> mcs;
    std::unique_ptr<nicoff::TasLock> tas;
};

struct nicoff_atomic_server {
    std::unique_ptr<nicoff::AtomicServer> server;
};

namespace {

nicoff::RemoteWord remote_word(const struct nicoff_remote_word &w) {
    return {w.card, w.port, w.rkey, w.width, w.offset};
}

// f on whichever lock a handle holds (both have lock() and unlock()).
template <class F>
int on_lock(nicoff_lock *lock, F f) {
    if (!lock)
        return -EINVAL;
    return guarded([&] {
        if (lock->mcs)
            f(*lock->mcs);
        else
            f(*lock->tas);
    });
}

} // namespace

extern "C" {

int nicoff_rmem_create(nicoff_port *port, int kind, nicoff_rmem **out) {
    if (!port || !out || (kind != NICOFF_RMEM_CARD && kind != NICOFF_RMEM_HOST))
        return -EINVAL;
    return guarded([&] {
        std::unique_ptr<nicoff::RemoteMemory> m;
        if (kind == NICOFF_RMEM_CARD)
            m = std::make_unique<nicoff::CardMemory>(port->port);
        else
            m = std::make_unique<nicoff::HostMemory>(port->port);
        return make_handle(out, nicoff_rmem{std::move(m)});
    });
}

void nicoff_rmem_destroy(nicoff_rmem *mem) { std::unique_ptr<nicoff_rmem> owned(mem); }

int nicoff_rmem_atomic(nicoff_rmem *mem, uint8_t opcode, const struct nicoff_remote_word *w,
                       uint64_t operand, uint64_t compare, uint64_t *old) {
    if (!mem || !w || !old)
        return -EINVAL;
    return guarded([&] { *old = mem->mem->atomic(opcode, remote_word(*w), operand, compare); });
}

int nicoff_lock_create(nicoff_rmem *mem, int kind, uint32_t rank,
                       const struct nicoff_remote_word *qnodes, uint32_t nranks,
                       const struct nicoff_remote_word *word, void *local_node, size_t local_len,
                       nicoff_lock **out) {
    if (!mem || !word || !out || (kind != NICOFF_LOCK_MCS && kind != NICOFF_LOCK_TAS))
        return -EINVAL;
    if (kind == NICOFF_LOCK_MCS && (!qnodes || !nranks || !local_node))
        return -EINVAL;
    return guarded([&] {
        auto l = std::make_unique<nicoff_lock>();
        if (kind == NICOFF_LOCK_MCS) {
            std::vector<nicoff::RemoteWord> q;
            for (uint32_t i = 0; i < nranks; i++)
                q.push_back(remote_word(qnodes[i]));
            l->mcs = std::make_unique<nicoff::McsLock>(
                *mem->mem, rank, std::move(q), remote_word(*word),
                std::span<std::byte>(static_cast<std::byte *>(local_node), local_len));
        } else {
            l->tas = std::make_unique<nicoff::TasLock>(*mem->mem, rank, remote_word(*word));
        }
        *out = l.release();
    });
}

int nicoff_lock_acquire(nicoff_lock *lock) {
    return on_lock(lock, [](auto &l) { l.lock(); });
}

int nicoff_lock_release(nicoff_lock *lock) {
    return on_lock(lock, [](auto &l) { l.unlock(); });
}

void nicoff_lock_destroy(nicoff_lock *lock) { std::unique_ptr<nicoff_lock> owned(lock); }

int nicoff_atomic_server_create(nicoff_port *port, void *mem, size_t len, int mode,
                                uint32_t spin_us, nicoff_atomic_server **out) {
    if (!port || !mem || !len || !out || mode < NICOFF_SERVER_POLL || mode > NICOFF_SERVER_BLOCK)
        return -EINVAL;
    return guarded([&] {
        auto s = std::make_unique<nicoff::AtomicServer>(
            port->port, std::span<std::byte>(static_cast<std::byte *>(mem), len),
            static_cast<nicoff::ServerMode>(mode), std::chrono::microseconds(spin_us));
        return make_handle(out, nicoff_atomic_server{std::move(s)});
    });
}

int nicoff_atomic_server_serve(nicoff_atomic_server *server, const volatile int *stop) {
    if (!server || !stop)
        return -EINVAL;
    return guarded([&] { server->server->serve([stop] { return *stop != 0; }); });
}

int nicoff_atomic_server_serve_ready(nicoff_atomic_server *server) {
    if (!server)
        return -EINVAL;
    return guarded([&] { return static_cast<int>(server->server->serve_ready()); });
}

void nicoff_atomic_server_destroy(nicoff_atomic_server *server) {
    std::unique_ptr<nicoff_atomic_server> owned(server);
}

} // extern "C"
