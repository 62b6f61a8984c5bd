// nicoff::detail::Dispatcher: a port's completions to their owners'
// handlers, and the one wait loop of the library's helpers.
#include "dispatch.hpp"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <climits>
#include <cstdio>

namespace nicoff::detail {

namespace {

std::uint64_t now_ns() noexcept {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
            .count());
}

// t + d, saturating: the waits take "no limit" as a huge duration.
Clock::time_point later(Clock::time_point t, Clock::duration d) noexcept {
    return d >= Clock::time_point::max() - t ? Clock::time_point::max() : t + d;
}

} // namespace

bool Waiter::spinning() {
    if (!start_)
        start_ = now_ns();
    return now_ns() - start_ < spin_ns_;
}

void Waiter::pause() {
    if (spins_ < pause_looks_) {
        spins_++;
        relax_cpu();
    } else if (spinning()) {
        sched_yield();
    } else {
        const timespec ts{0, static_cast<long>(sleep_ns_)};
        nanosleep(&ts, nullptr);
    }
}

Deadline Deadline::after(Clock::duration d) noexcept {
    Deadline dl;
    if (d >= Clock::duration::zero())
        dl.at = later(Clock::now(), d);
    return dl;
}

Deadline Deadline::after_silence(Clock::duration d) noexcept {
    Deadline dl = after(d);
    if (d >= Clock::duration::zero())
        dl.silence = std::max(d, Clock::duration(1));
    return dl;
}

Dispatcher::Owner Dispatcher::add(CompletionHandler handler) {
    if (entries_.size() >= 0xffff)
        throw_errno(ENOSPC, "nicoff: too many completion owners on one port");
    while (next_ == 0 || find(next_))
        next_++;
    const Owner o = next_++;
    entries_.push_back({o, std::move(handler)});
    return o;
}

void Dispatcher::set(Owner owner, CompletionHandler handler) {
    for (Entry &e : entries_)
        if (e.owner == owner)
            e.handler = std::move(handler);
}

void Dispatcher::remove(Owner owner) noexcept {
    std::erase_if(entries_, [owner](const Entry &e) { return e.owner == owner; });
}

const CompletionHandler *Dispatcher::find(Owner owner) const noexcept {
    for (const Entry &e : entries_)
        if (e.owner == owner)
            return &e.handler;
    return nullptr;
}

std::size_t Dispatcher::reap() {
    nicoff_cqe cqes[32];
    const std::size_t n = src_.poll(cqes);
    if (n == 0 && src_.in_error())
        throw_errno(EIO, "nicoff: port is in the error state");
    for (std::size_t i = 0; i < n; i++) {
        const CompletionHandler *h = find(owner_of(cqes[i].tag));
        if (h) {
            (*h)(cqes[i]);
        } else {
            unknown_++;
            last_unknown_tag_ = cqes[i].tag;
        }
    }
    return n;
}

void Dispatcher::check() {
    if (unknown_ == reported_)
        return;
    const std::uint64_t n = unknown_ - reported_;
    reported_ = unknown_;
    char what[128];
    std::snprintf(what, sizeof(what),
                  "nicoff: %llu completion(s) of no operation of the library on its port "
                  "(last tag %#llx)",
                  static_cast<unsigned long long>(n),
                  static_cast<unsigned long long>(last_unknown_tag_));
    throw_errno(EPROTO, what);
}

bool Dispatcher::wait_until(const std::function<bool()> &done, Deadline deadline,
                            const Pacing &pacing) {
    const auto spin_ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(pacing.spin).count());
    Waiter w(spin_ns, Waiter::default_sleep_ns, pacing.pause_looks);
    for (;;) {
        const std::size_t n = reap();
        check();
        if (done())
            return true;
        Clock::time_point now = Clock::now();
        if (n) {
            if (deadline.silence > Clock::duration::zero())
                deadline.at = later(now, deadline.silence);
            if (pacing.respin)
                w = Waiter(spin_ns, Waiter::default_sleep_ns, pacing.pause_looks);
            continue;
        }
        if (now >= deadline.at)
            return false;
        if (pacing.sleep == Pacing::Sleep::nap || w.spinning()) {
            w.pause();
            continue;
        }
        std::chrono::milliseconds ms = pacing.max_sleep;
        if (deadline.at != Clock::time_point::max()) {
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline.at - now);
            if (ms.count() < 0 || left < ms)
                ms = left;
        }
        if (pacing.sleeps)
            (*pacing.sleeps)++;
        src_.wait(ms);
        if (pacing.respin)
            w = Waiter(spin_ns, Waiter::default_sleep_ns, pacing.pause_looks);
    }
}

} // namespace nicoff::detail
