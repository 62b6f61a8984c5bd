// nicoff::RegionMap: address -> region lookups on liburcu's lock-free hash
// table, flavour liburcu-bp (readers need no registration).
#include "common.hpp"

#include <urcu/urcu-bp.h>
// The flavour header must come first: rculfhash.h builds on it.
#include <urcu/rculfhash.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>

namespace nicoff {

namespace {

// A region needs this many granules at most (2^24 nodes of 32 bytes); a
// larger region needs a larger granule.
constexpr std::uint64_t max_granules_per_region = std::uint64_t{1} << 24;

// splitmix64's finalizer: granule numbers are consecutive, hashes must not be.
unsigned long hash_granule(std::uint64_t g) noexcept {
    g ^= g >> 30;
    g *= 0xbf58476d1ce4e5b9ull;
    g ^= g >> 27;
    g *= 0x94d049bb133111ebull;
    g ^= g >> 31;
    return static_cast<unsigned long>(g);
}

class ReadLock {
public:
    ReadLock() noexcept { urcu_bp_read_lock(); }
    ReadLock(const ReadLock &) = delete;
    ReadLock &operator=(const ReadLock &) = delete;
    ~ReadLock() { urcu_bp_read_unlock(); }
};

} // namespace

struct RegionMap::Impl {
    struct Record;

    // One hash node per granule a region touches.  Standard layout with the
    // cds_lfht_node first, so a node pointer converts back to a Node.
    struct Node {
        cds_lfht_node ht;
        std::uint64_t granule;
        const Record *rec;
    };

    // Immutable once published: readers copy entry out.
    struct Record {
        Entry entry;
        std::unique_ptr<Node[]> nodes;
        std::size_t count = 0;
    };

    static int match(cds_lfht_node *node, const void *key) {
        return reinterpret_cast<const Node *>(node)->granule ==
               *static_cast<const std::uint64_t *>(key);
    }

    unsigned shift = default_granule_shift;
    cds_lfht *ht = nullptr;
    std::atomic<std::size_t> count{0};
    std::mutex write_mu;                                       // writers only
    std::map<std::uintptr_t, std::unique_ptr<Record>> by_base; // under write_mu

    void unhash(const Record &rec) {
        ReadLock lock;
        for (std::size_t i = 0; i < rec.count; i++)
            cds_lfht_del(ht, &rec.nodes[i].ht);
    }
};

RegionMap::RegionMap(unsigned granule_shift) : impl_(std::make_unique<Impl>()) {
    if (granule_shift < 12 || granule_shift > 48)
        detail::throw_errno(EINVAL, "nicoff: RegionMap granule_shift must be in [12, 48]");
    impl_->shift = granule_shift;
    impl_->ht = cds_lfht_new_flavor(64, 64, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING,
                                    &urcu_bp_flavor, nullptr);
    if (!impl_->ht)
        detail::throw_errno(ENOMEM, "nicoff: RegionMap hash table");
}

RegionMap::~RegionMap() {
    {
        std::lock_guard lock(impl_->write_mu);
        for (const auto &[base, rec] : impl_->by_base)
            impl_->unhash(*rec);
    }
    urcu_bp_synchronize_rcu();
    impl_->by_base.clear();
    cds_lfht_destroy(impl_->ht, nullptr);
}

void RegionMap::insert(const Entry &entry) {
    const std::uintptr_t first = entry.addr;
    if (entry.length == 0 || entry.length - 1 > UINTPTR_MAX - first)
        detail::throw_errno(EINVAL, "nicoff: RegionMap: empty or wrapping range");
    const std::uintptr_t last = first + (entry.length - 1);
    const std::uint64_t g0 = first >> impl_->shift;
    const std::uint64_t count = (last >> impl_->shift) - g0 + 1;
    if (count > max_granules_per_region)
        detail::throw_errno(E2BIG, "nicoff: RegionMap: region too large for the granule size");

    std::lock_guard lock(impl_->write_mu);
    auto next = impl_->by_base.lower_bound(first);
    if (next != impl_->by_base.end() && next->first <= last)
        detail::throw_errno(EEXIST, "nicoff: RegionMap: overlapping region");
    if (next != impl_->by_base.begin()) {
        const Entry &prev = std::prev(next)->second->entry;
        if (prev.addr + (prev.length - 1) >= first)
            detail::throw_errno(EEXIST, "nicoff: RegionMap: overlapping region");
    }

    auto rec = std::make_unique<Impl::Record>();
    rec->entry = entry;
    rec->count = count;
    rec->nodes = std::make_unique<Impl::Node[]>(count);
    for (std::uint64_t i = 0; i < count; i++) {
        Impl::Node &n = rec->nodes[i];
        cds_lfht_node_init(&n.ht);
        n.granule = g0 + i;
        n.rec = rec.get();
    }
    Impl::Node *nodes = rec->nodes.get();
    impl_->by_base.emplace_hint(next, first, std::move(rec));
    {
        ReadLock rl;
        for (std::uint64_t i = 0; i < count; i++)
            cds_lfht_add(impl_->ht, hash_granule(nodes[i].granule), &nodes[i].ht);
    }
    impl_->count.fetch_add(1, std::memory_order_relaxed);
}

void RegionMap::insert(const MemoryRegion &mr, void *user) {
    if (!mr.valid())
        detail::throw_errno(EINVAL, "nicoff: RegionMap: empty MemoryRegion");
    Entry e;
    e.addr = reinterpret_cast<std::uintptr_t>(mr.data());
    e.length = mr.size();
    e.handle = mr.handle();
    e.rkey = mr.rkey();
    e.access = mr.access();
    e.user = user;
    insert(e);
}

bool RegionMap::erase(std::uintptr_t base) {
    std::unique_ptr<Impl::Record> rec;
    {
        std::lock_guard lock(impl_->write_mu);
        auto it = impl_->by_base.find(base);
        if (it == impl_->by_base.end())
            return false;
        impl_->unhash(*it->second);
        rec = std::move(it->second);
        impl_->by_base.erase(it);
        impl_->count.fetch_sub(1, std::memory_order_relaxed);
        // Wait for the grace period under the lock: after erase() returns no
        // reader can still see the region, and no new one can find it.
        urcu_bp_synchronize_rcu();
    }
    return true; // rec (and its nodes) freed here, after the grace period
}

std::optional<RegionMap::Entry> RegionMap::lookup(std::uintptr_t addr,
                                                  std::size_t len) const noexcept {
    if (len == 0)
        len = 1;
    std::uint64_t g = addr >> impl_->shift;
    ReadLock lock;
    cds_lfht_iter it;
    cds_lfht_lookup(impl_->ht, hash_granule(g), &Impl::match, &g, &it);
    for (cds_lfht_node *node = cds_lfht_iter_get_node(&it); node;
         cds_lfht_next_duplicate(impl_->ht, &Impl::match, &g, &it),
                       node = cds_lfht_iter_get_node(&it)) {
        const Entry &e = reinterpret_cast<const Impl::Node *>(node)->rec->entry;
        if (e.contains(addr, len))
            return e;
    }
    return std::nullopt;
}

std::size_t RegionMap::size() const noexcept {
    return impl_->count.load(std::memory_order_relaxed);
}

std::size_t RegionMap::granule_size() const noexcept { return std::size_t{1} << impl_->shift; }

} // namespace nicoff
