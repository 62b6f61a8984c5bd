/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the ARMCI test programs: failing with the rank named,
 * a seeded generator every rank can replay (a receiver recomputes what a
 * sender sent from the sender's seed), strided shapes and the local
 * reference copy that strided operations are compared against.
 */
#ifndef NICOFF_ARMCI_TEST_H
#define NICOFF_ARMCI_TEST_H

#include <armci.h>

/*
 * mt_fail (the job down, this rank named), mt_arg (a positive argument) and
 * mt_mpi_init.
 */
#include "../../mpi/tests/mpi_test.h"

/* ARMCI's limit on stride levels is 8; the tests go to 7 dimensions. */
#define AT_MAX_DIMS 7

static int at_rank = -1;
static int at_nproc;

/* An ARMCI call returning an int that must be 0. */
#define AT_CK(call)                                                                                \
    do {                                                                                           \
        int at_rc_ = (call);                                                                       \
        if (at_rc_ != 0)                                                                           \
            mt_fail("%s:%d: %s returned %d", __FILE__, __LINE__, #call, at_rc_);                   \
    } while (0)

/*
 * MPI_Init with MPI's default error handler (the ARMCIs and GA under test
 * rely on it), this rank for mt_fail's messages.
 */
static inline void at_mpi_init(int *argc, char ***argv, const char *prog) {
    mt_mpi_init(argc, argv, prog);
    MPI_Comm_rank(MPI_COMM_WORLD, &at_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &at_nproc);
    mt_world_rank = at_rank;
}

static inline void at_init(int *argc, char ***argv, const char *prog) {
    at_mpi_init(argc, argv, prog);
    AT_CK(ARMCI_Init());
}

/* The last barrier, rank 0's success line (printf's fmt and arguments), the end. */
static inline void __attribute__((format(printf, 1, 2))) at_finish(const char *fmt, ...) {
    va_list ap;

    ARMCI_Barrier();
    if (at_rank == 0) {
        printf("%s: %d ranks: ok: ", mt_prog, at_nproc);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
    }
    ARMCI_Finalize();
    MPI_Finalize();
}

/* A collective allocation of len bytes on every rank; ptrs[r] is rank r's. */
static inline void **at_malloc(long len) {
    void **ptrs = calloc((size_t)at_nproc, sizeof(void *));

    if (!ptrs)
        mt_fail("out of memory");
    AT_CK(ARMCI_Malloc(ptrs, len));
    if (!ptrs[at_rank])
        mt_fail("ARMCI_Malloc(%ld) gave no local piece", len);
    return ptrs;
}

static inline void at_free(void **ptrs) {
    AT_CK(ARMCI_Free(ptrs[at_rank]));
    free(ptrs);
}

static inline void *at_xmalloc(size_t len) {
    void *p = malloc(len ? len : 1);

    if (!p)
        mt_fail("out of memory (%zu bytes)", len);
    return p;
}

/* splitmix64: the stream of one (seed, a, b, c) is the same on every rank. */
struct at_rng {
    uint64_t s;
};

static inline uint64_t at_next(struct at_rng *g) {
    uint64_t z = (g->s += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline struct at_rng at_rng(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
    struct at_rng g = {seed ^ (a << 40) ^ (b << 20) ^ c};

    at_next(&g);
    return g;
}

/* Uniform in [lo, hi]. */
static inline long at_range(struct at_rng *g, long lo, long hi) {
    return lo + (long)(at_next(g) % (uint64_t)(hi - lo + 1));
}

static inline void at_fill(struct at_rng *g, void *buf, size_t len) {
    unsigned char *p = buf;
    size_t i;

    for (i = 0; i < len; i++)
        p[i] = (unsigned char)at_next(g);
}

/*
 * at_init for a program of arguments ITERS [SEED]: returns ITERS (def_iters
 * without it) and sets *seed (default 1; the same on every rank).
 */
static inline int at_start(int *argc, char ***argv, const char *prog, long def_iters,
                           uint64_t *seed) {
    at_init(argc, argv, prog);
    *seed = (uint64_t)mt_arg(*argc, *argv, 2, 1);
    if (at_rank == 0)
        printf("%s: seed %llu\n", prog, (unsigned long long)*seed);
    return (int)mt_arg(*argc, *argv, 1, def_iters);
}

/*
 * A strided patch in ARMCI's terms: count[0] bytes contiguous, count[1..levels]
 * repetitions, stride[i] the byte distance between repetitions of level i+1.
 */
struct at_shape {
    int levels;
    int count[AT_MAX_DIMS + 1];
};

/* Bytes from the first to one past the last byte the patch touches. */
static inline long at_span(const struct at_shape *sh, const int *stride) {
    long span = sh->count[0];
    int i;

    for (i = 1; i <= sh->levels; i++)
        span += (long)(sh->count[i] - 1) * stride[i - 1];
    return span;
}

static inline long at_bytes(const struct at_shape *sh) {
    long n = sh->count[0];
    int i;

    for (i = 1; i <= sh->levels; i++)
        n *= sh->count[i];
    return n;
}

/*
 * A random shape of dims dimensions whose contiguous run is a multiple of
 * unit bytes, sized so that a span stays within a few tens of KiB even at
 * seven dimensions.
 */
static inline void at_random_shape(struct at_rng *g, int dims, int unit, struct at_shape *sh) {
    static const int max_count[AT_MAX_DIMS + 1] = {0, 24, 12, 8, 5, 4, 3, 2};
    int i;

    sh->levels = dims - 1;
    sh->count[0] = unit * (int)at_range(g, 1, 16 / unit + 8);
    for (i = 1; i < dims; i++)
        sh->count[i] = (int)at_range(g, 1, max_count[dims]);
}

/*
 * Strides of a patch of shape sh inside a larger array: the rows are
 * count[0] bytes plus up to pad bytes (a multiple of unit), each higher
 * dimension of the array up to 3 more than the patch's (1 from 5 dimensions
 * up, to stay within a few hundred KiB).  Each stride is a
 * multiple of the one below, as an array's are: ARMCI-MPI (the control)
 * turns a strided access into an MPI subarray type and cannot describe
 * anything else.
 */
static inline void at_random_strides(struct at_rng *g, const struct at_shape *sh, int unit, int pad,
                                     int *stride) {
    int i;

    for (i = 0; i < sh->levels; i++) {
        if (i == 0)
            stride[0] = (int)(sh->count[0] + unit * at_range(g, 0, pad / unit));
        else
            stride[i] =
                stride[i - 1] * (sh->count[i] + (int)at_range(g, 0, sh->levels >= 4 ? 1 : 3));
    }
}

/*
 * The reference: copy the patch of shape sh from src (strides ss) to dst
 * (strides ds), and, when acc is set, add it instead as elements of type
 * ARMCI_ACC_INT, _LNG or _DBL scaled by *scale.
 */
static inline void at_strided_apply(char *dst, const int *ds, const char *src, const int *ss,
                                    const struct at_shape *sh, int acc, int type,
                                    const void *scale) {
    int idx[AT_MAX_DIMS + 1] = {0};
    long doff, soff, k, n;
    int i;

    for (;;) {
        doff = 0;
        soff = 0;
        for (i = 1; i <= sh->levels; i++) {
            doff += (long)idx[i] * ds[i - 1];
            soff += (long)idx[i] * ss[i - 1];
        }
        if (!acc) {
            memcpy(dst + doff, src + soff, (size_t)sh->count[0]);
        } else if (type == ARMCI_ACC_INT) {
            n = sh->count[0] / (long)sizeof(int);
            for (k = 0; k < n; k++)
                ((int *)(dst + doff))[k] += *(const int *)scale * ((const int *)(src + soff))[k];
        } else if (type == ARMCI_ACC_LNG) {
            n = sh->count[0] / (long)sizeof(long);
            for (k = 0; k < n; k++)
                ((long *)(dst + doff))[k] += *(const long *)scale * ((const long *)(src + soff))[k];
        } else {
            n = sh->count[0] / (long)sizeof(double);
            for (k = 0; k < n; k++)
                ((double *)(dst + doff))[k] +=
                    *(const double *)scale * ((const double *)(src + soff))[k];
        }
        for (i = 1; i <= sh->levels; i++) {
            if (++idx[i] < sh->count[i])
                break;
            idx[i] = 0;
        }
        if (i > sh->levels)
            return;
    }
}

/* The accumulate types the tests use, by turns. */
static const int at_acc_types[] = {ARMCI_ACC_INT, ARMCI_ACC_LNG, ARMCI_ACC_DBL};

/* A scale of any of them. */
union at_scale {
    int i;
    long l;
    double d;
};

static inline int at_type_size(int type) { return type == ARMCI_ACC_INT ? (int)sizeof(int) : 8; }

/*
 * n values of the accumulate type from g: integers of at most 1000 (long:
 * times 2^30, to use the upper half), exact in any order of summing.
 */
static inline void at_acc_values(struct at_rng *g, int type, void *v, long n) {
    long i, x;

    for (i = 0; i < n; i++) {
        x = at_range(g, -1000, 1000);
        if (type == ARMCI_ACC_INT)
            ((int *)v)[i] = (int)x;
        else if (type == ARMCI_ACC_LNG)
            ((long *)v)[i] = x << 30;
        else
            ((double *)v)[i] = (double)x;
    }
}

/* Rank r's scale in accumulate number k: different between ranks and calls. */
static inline void at_acc_scale(int type, int r, int k, union at_scale *s) {
    if (type == ARMCI_ACC_INT)
        s->i = (r + k) % 5 - 2;
    else if (type == ARMCI_ACC_LNG)
        s->l = -(long)r - 2 + k % 3;
    else
        s->d = 0.25 * (r + 1 + k % 4);
}

/*
 * Compare len bytes of what was seen against the reference; fail naming the
 * first difference and what was compared (printf's fmt and arguments).
 */
static inline void __attribute__((format(printf, 4, 5)))
at_compare(const void *seen, const void *want, size_t len, const char *fmt, ...) {
    const unsigned char *a = seen, *b = want;
    size_t i, bad = 0, first = 0;
    char what[160];
    va_list ap;

    for (i = 0; i < len; i++) {
        if (a[i] != b[i]) {
            if (!bad)
                first = i;
            bad++;
        }
    }
    if (!bad)
        return;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    mt_fail("%s: %zu of %zu bytes differ, first at byte %zu (0x%02x, expected 0x%02x)", what, bad,
            len, first, a[first], b[first]);
}

/* The local piece of an ARMCI allocation, read or written under Access_begin/end. */
static inline void at_local_write(void *piece, const void *src, size_t len) {
    ARMCI_Access_begin(piece);
    memcpy(piece, src, len);
    ARMCI_Access_end(piece);
}

static inline void at_local_read(void *dst, void *piece, size_t len) {
    ARMCI_Access_begin(piece);
    memcpy(dst, piece, len);
    ARMCI_Access_end(piece);
}

#endif
