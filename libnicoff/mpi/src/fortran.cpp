// libnicoff-mpi: Fortran entry points, for the MPI flavours whose Fortran
// bindings bypass the C symbols.
//
// MPICH's Fortran bindings call MPI_Barrier and MPI_Bcast, which pmpi.cpp
// defines, so MPICH needs nothing here.  Open MPI's call PMPI_Barrier and
// PMPI_Bcast directly: its mpif.h and `use mpi` names (mpi_barrier_ and
// the other three spellings compilers use) and the ompi_*_f functions its
// `use mpi_f08` module calls are defined here, converting the Fortran
// handles and handing over to the C calls of pmpi.cpp.  MPI_Ibarrier from
// Fortran goes to Open MPI unchanged: its MPI_Wait and MPI_Test from
// Fortran would not move a card barrier on.
#include <mpi.h>

#if defined(OPEN_MPI) && OPEN_MPI

extern "C" {
// Open MPI's Fortran MPI_BOTTOM: a common block whose address stands for it.
extern int mpi_fortran_bottom_;
}

namespace {

void barrier_f(const MPI_Fint *comm, MPI_Fint *ierr) {
    const int rc = MPI_Barrier(PMPI_Comm_f2c(*comm));
    if (ierr)
        *ierr = static_cast<MPI_Fint>(rc);
}

void bcast_f(char *buffer, const MPI_Fint *count, const MPI_Fint *datatype, const MPI_Fint *root,
             const MPI_Fint *comm, MPI_Fint *ierr) {
    void *buf = buffer == reinterpret_cast<char *>(&mpi_fortran_bottom_) ? MPI_BOTTOM : buffer;
    const int rc = MPI_Bcast(buf, static_cast<int>(*count), PMPI_Type_f2c(*datatype),
                             static_cast<int>(*root), PMPI_Comm_f2c(*comm));
    if (ierr)
        *ierr = static_cast<MPI_Fint>(rc);
}

} // namespace

#pragma GCC visibility push(default)
extern "C" {

// Every spelling of each name Open MPI's own bindings define.
#define NICOFF_MPI_FORTRAN(name, upper, args, call)                                                \
    void mpi_##name args { call; }                                                                 \
    void mpi_##name##_ args { call; }                                                              \
    void mpi_##name##__ args { call; }                                                             \
    void upper args { call; }                                                                      \
    void ompi_##name##_f args { call; }

NICOFF_MPI_FORTRAN(barrier, MPI_BARRIER, (MPI_Fint * comm, MPI_Fint *ierr), barrier_f(comm, ierr))
NICOFF_MPI_FORTRAN(bcast, MPI_BCAST,
                   (char *buffer, MPI_Fint *count, MPI_Fint *datatype, MPI_Fint *root,
                    MPI_Fint *comm, MPI_Fint *ierr),
                   bcast_f(buffer, count, datatype, root, comm, ierr))

} // extern "C"
#pragma GCC visibility pop

#endif // OPEN_MPI
