/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the MPI test programs: failing with the rank and
 * iteration named, and the barrier safety check on counters in POSIX shared
 * memory (every rank of a job runs on one host: every card lives in one
 * kernel).
 */
#ifndef NICOFF_MPI_TEST_H
#define NICOFF_MPI_TEST_H

#include <fcntl.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int mt_world_rank = -1;
static const char *mt_prog = "mpi_test";

/* Print the violation and take the whole job down: a rank that only
 * returned would leave the others waiting in a collective.
 */
static inline void __attribute__((format(printf, 1, 2), noreturn)) mt_fail(const char *fmt, ...) {
    va_list ap;

    fprintf(stderr, "%s: rank %d: FAIL: ", mt_prog, mt_world_rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    _exit(1);
}

/* An MPI call that must succeed (the error handler is set to return). */
#define MT_CK(call)                                                                                \
    do {                                                                                           \
        int mt_rc_ = (call);                                                                       \
        if (mt_rc_ != MPI_SUCCESS) {                                                               \
            char mt_s_[MPI_MAX_ERROR_STRING];                                                      \
            int mt_l_ = 0;                                                                         \
            MPI_Error_string(mt_rc_, mt_s_, &mt_l_);                                               \
            mt_fail("%s:%d: %s: %s", __FILE__, __LINE__, #call, mt_s_);                            \
        }                                                                                          \
    } while (0)

/* MPI_Init for program prog (mt_fail's name for it); exits if it fails. */
static inline void mt_mpi_init(int *argc, char ***argv, const char *prog) {
    mt_prog = prog;
    if (MPI_Init(argc, argv) != MPI_SUCCESS) {
        fprintf(stderr, "%s: MPI_Init failed\n", prog);
        exit(1);
    }
}

static inline void mt_init(int *argc, char ***argv, const char *prog) {
    mt_mpi_init(argc, argv, prog);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MT_CK(MPI_Comm_rank(MPI_COMM_WORLD, &mt_world_rank));
}

/* A positive integer argument, or the default. */
static inline long mt_arg(int argc, char **argv, int i, long def) {
    char *end;
    long v;

    if (argc <= i)
        return def;
    v = strtol(argv[i], &end, 0);
    if (*argv[i] == '\0' || *end != '\0' || v <= 0)
        mt_fail("argument %d: not a positive integer: %s", i, argv[i]);
    return v;
}

/*
 * Shared counters: nsets rows of one slot per world rank.  Before barrier k
 * on a communicator a rank stores k in its slot of that communicator's row;
 * once out of the barrier every member's slot must hold k or more.
 */
struct mt_slots {
    volatile uint64_t *slot;
    int nsets;
    int nranks;
    size_t len;
};

static inline void mt_slots_open(struct mt_slots *s, int nsets) {
    char name[64];
    long pid = getpid();
    int fd;

    MT_CK(MPI_Comm_size(MPI_COMM_WORLD, &s->nranks));
    /* Rank 0's pid names the segment: unique among the jobs of the host. */
    MT_CK(PMPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD));
    snprintf(name, sizeof(name), "/nicoff-%s-%ld", mt_prog, pid);
    s->nsets = nsets;
    s->len = (size_t)nsets * s->nranks * sizeof(uint64_t);
    if (mt_world_rank == 0) {
        fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)s->len) != 0)
            mt_fail("shm_open/ftruncate %s: %m", name);
        close(fd);
    }
    MT_CK(PMPI_Barrier(MPI_COMM_WORLD));
    fd = shm_open(name, O_RDWR, 0);
    if (fd < 0)
        mt_fail("shm_open %s: %m", name);
    s->slot = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (s->slot == MAP_FAILED)
        mt_fail("mmap %s: %m", name);
    close(fd);
    MT_CK(PMPI_Barrier(MPI_COMM_WORLD));
    if (mt_world_rank == 0)
        shm_unlink(name);
}

static inline void mt_slots_close(struct mt_slots *s) { munmap((void *)s->slot, s->len); }

static inline volatile uint64_t *mt_slot(struct mt_slots *s, int set, int world_rank) {
    return &s->slot[(size_t)set * s->nranks + world_rank];
}

/* The world ranks of a communicator's members, in its rank order. */
static inline int *mt_members(MPI_Comm comm, int *n) {
    MPI_Group wg, g;
    int *in, *out, i;

    MT_CK(MPI_Comm_size(comm, n));
    in = malloc(sizeof(int) * (size_t)*n);
    out = malloc(sizeof(int) * (size_t)*n);
    if (!in || !out)
        mt_fail("out of memory");
    for (i = 0; i < *n; i++)
        in[i] = i;
    MT_CK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    MT_CK(MPI_Comm_group(comm, &g));
    MT_CK(MPI_Group_translate_ranks(g, *n, in, wg, out));
    MT_CK(MPI_Group_free(&g));
    MT_CK(MPI_Group_free(&wg));
    free(in);
    return out;
}

/* Announce entry into barrier k of row set. */
static inline void mt_enter(struct mt_slots *s, int set, uint64_t k) {
    __atomic_store_n(mt_slot(s, set, mt_world_rank), k, __ATOMIC_SEQ_CST);
}

/* After barrier k of row set: every member must have entered it. */
static inline void mt_check(struct mt_slots *s, int set, const int *members, int n, uint64_t k,
                            const char *what) {
    int i;

    for (i = 0; i < n; i++) {
        uint64_t v = __atomic_load_n(mt_slot(s, set, members[i]), __ATOMIC_SEQ_CST);

        if (v < k)
            mt_fail("%s: left barrier %llu while world rank %d had entered only %llu", what,
                    (unsigned long long)k, members[i], (unsigned long long)v);
    }
}

/* One checked barrier: enter, MPI_Barrier, check. */
static inline void mt_safe_barrier(struct mt_slots *s, int set, MPI_Comm comm, const int *members,
                                   int n, uint64_t k, const char *what) {
    mt_enter(s, set, k);
    MT_CK(MPI_Barrier(comm));
    mt_check(s, set, members, n, k, what);
}

#endif
