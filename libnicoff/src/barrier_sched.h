// Internal: the card's barrier schedules (firmware-sim/barrier_alg.c,
// compiled into the library) for nicoff::barrier_schedule and HostBarrier,
// so that the host runs exactly what the card runs.  C, for barrier_sched.c.
#ifndef NICOFF_SRC_BARRIER_SCHED_H
#define NICOFF_SRC_BARRIER_SCHED_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// One message of the schedule: recv 0 for one the member sends on
// entering `step`, 1 for one that step waits for.
typedef void nicoff_bsched_msg_fn(void *ctx, int recv, uint32_t rank, uint32_t step);

// Calls msg for every message of member rank's schedule (the sends by
// step, then the receives by sender) and returns the number of steps, or
// -ENOMEM.  alg is a NICOFF_BARRIER_* other than AUTO, param a tree
// degree or combining fan-in of at least 2, or 0 for the card's default;
// the caller checks them.
int nicoff_bsched_walk(uint32_t alg, uint32_t param, uint32_t rank, uint32_t size,
                       nicoff_bsched_msg_fn *msg, void *ctx);

#ifdef __cplusplus
}
#endif

#endif // NICOFF_SRC_BARRIER_SCHED_H
