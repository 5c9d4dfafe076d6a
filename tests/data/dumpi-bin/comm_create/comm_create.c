/* perfmod test program: a communicator made by MPI_Comm_group, MPI_Group_incl
 * and MPI_Comm_create (world ranks 3, 1, 0 in that order; rank 2 is left out),
 * traced with sst-dumpi's libdumpi for tests/data/dumpi-bin (run on 4 ranks). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  int rank, size, sub_rank = -1;
  int members[3] = {3, 1, 0};
  double x, sum, buf[8] = {0}, rbuf[8];
  MPI_Group world_group, sub_group;
  MPI_Comm sub;
  MPI_Request req[2];
  MPI_Status st[2];

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Group_incl(world_group, 3, members, &sub_group);
  MPI_Comm_create(MPI_COMM_WORLD, sub_group, &sub);
  x = rank;
  if (sub != MPI_COMM_NULL) {
    MPI_Comm_rank(sub, &sub_rank);
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, sub);
    MPI_Bcast(buf, 4, MPI_INT, 0, sub);
    /* ring in the new communicator: sub rank r sends to r + 1 */
    MPI_Irecv(rbuf, 5, MPI_DOUBLE, (sub_rank + 2) % 3, 7, sub, &req[0]);
    MPI_Isend(buf, 5, MPI_DOUBLE, (sub_rank + 1) % 3, 7, sub, &req[1]);
    MPI_Waitall(2, req, st);
    MPI_Comm_free(&sub);
  }
  MPI_Group_free(&sub_group);
  MPI_Group_free(&world_group);
  MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  if (rank == 0) printf("done\n");
  return 0;
}
