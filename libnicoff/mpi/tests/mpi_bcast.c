// SPDX-License-Identifier: GPL-2.0
/*
 * mpi_bcast [MAXBYTES]: MPI_Bcast moves the root's data, byte for byte, for
 * 0, 1, 8, 4095, 16 KiB, 16 KiB + 1 and 1 MiB (those up to MAXBYTES, default
 * all), from every root, as MPI_BYTE, MPI_INT, MPI_DOUBLE and a vector of
 * every other int (non-contiguous: a library must pass it through or move
 * it right), on MPI_COMM_WORLD and on the communicators of a split by rank
 * parity.  The gaps of the vector and the bytes after the data must stay as
 * they were.
 */
#include "mpi_test.h"

static const size_t sizes[] = { 0, 1, 8, 4095, 16384, 16385, 1 << 20 };

enum { T_BYTE, T_INT, T_DOUBLE, T_VECTOR, NTYPES };
static const char *const type_name[NTYPES] = { "MPI_BYTE", "MPI_INT", "MPI_DOUBLE",
					       "vector of every other MPI_INT" };

/* Byte i of the message of (root, bytes, type, comm): never the guard. */
static unsigned char pattern(int root, size_t bytes, int t, int c, size_t i)
{
	return (unsigned char)((i * 131 + (size_t)root * 17 + bytes * 7 + (size_t)t * 5 +
				(size_t)c * 3) % 251 + 1);
}

#define GUARD 0

/* Is byte i of the buffer part of the message (not a vector's gap)? */
static int in_message(int t, size_t i)
{
	return t != T_VECTOR || (i / sizeof(int)) % 2 == 0;
}

static void one(MPI_Comm comm, int c, const char *cname, int root, size_t bytes, int t,
		MPI_Datatype vec, unsigned char *buf, size_t buflen)
{
	MPI_Datatype type = MPI_BYTE;
	size_t span, i;
	int rank, count;

	MT_CK(MPI_Comm_rank(comm, &rank));
	switch (t) {
	case T_BYTE:
		count = (int)bytes;
		span = bytes;
		break;
	case T_INT:
		type = MPI_INT;
		count = (int)(bytes / sizeof(int));
		span = (size_t)count * sizeof(int);
		break;
	case T_DOUBLE:
		type = MPI_DOUBLE;
		count = (int)(bytes / sizeof(double));
		span = (size_t)count * sizeof(double);
		break;
	default:
		/* One vector element: ints at stride 2; bytes of data in all. */
		type = vec;
		count = (int)(bytes / (64 * sizeof(int)));
		span = (size_t)count * 128 * sizeof(int);
		break;
	}
	if (span > buflen)
		mt_fail("buffer too small");
	for (i = 0; i < buflen && i < span + 64; i++) {
		int data = rank == root && i < span && in_message(t, i);

		buf[i] = data ? pattern(root, bytes, t, c, i) : GUARD;
	}
	MT_CK(MPI_Bcast(buf, count, type, root, comm));
	for (i = 0; i < buflen && i < span + 64; i++) {
		unsigned char want = i < span && in_message(t, i) ? pattern(root, bytes, t, c, i)
								   : GUARD;

		if (buf[i] != want)
			mt_fail("%s: root %d, %zu bytes as %s (count %d): byte %zu is %u, not %u",
				cname, root, bytes, type_name[t], count, i, buf[i], want);
	}
}

int main(int argc, char **argv)
{
	MPI_Comm comms[2];
	const char *cnames[2] = { "MPI_COMM_WORLD", "split by rank % 2" };
	MPI_Datatype vec;
	unsigned char *buf;
	size_t buflen, maxbytes;
	int c, root, size, t, n = 0;
	unsigned int s;

	mt_init(&argc, &argv, "mpi_bcast");
	maxbytes = (size_t)mt_arg(argc, argv, 1, 1 << 20);
	/* 64 ints at stride 2: the extent holds 127 ints, resized to 128 so
	 * that consecutive elements tile the buffer.
	 */
	{
		MPI_Datatype v;

		MT_CK(MPI_Type_vector(64, 1, 2, MPI_INT, &v));
		MT_CK(MPI_Type_create_resized(v, 0, 128 * sizeof(int), &vec));
		MT_CK(MPI_Type_free(&v));
		MT_CK(MPI_Type_commit(&vec));
	}
	/* The vector spans twice its data. */
	buflen = 2 * (1 << 20) + 64;
	buf = malloc(buflen);
	if (!buf)
		mt_fail("out of memory");
	comms[0] = MPI_COMM_WORLD;
	MT_CK(MPI_Comm_split(MPI_COMM_WORLD, mt_world_rank % 2, mt_world_rank, &comms[1]));
	MPI_Comm_set_errhandler(comms[1], MPI_ERRORS_RETURN);
	for (c = 0; c < 2; c++) {
		MT_CK(MPI_Comm_size(comms[c], &size));
		for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			if (sizes[s] > maxbytes)
				continue;
			for (t = 0; t < NTYPES; t++)
				for (root = 0; root < size; root++, n++)
					one(comms[c], c, cnames[c], root, sizes[s], t, vec, buf,
					    buflen);
		}
	}
	MT_CK(MPI_Comm_free(&comms[1]));
	MT_CK(MPI_Type_free(&vec));
	free(buf);
	if (mt_world_rank == 0)
		printf("mpi_bcast: %d broadcasts checked: ok\n", n);
	MPI_Finalize();
	return 0;
}
