/* perfmod test program: point-to-point, nonblocking and collective calls on
 * MPI_COMM_WORLD, a Comm_dup, a Comm_split and a derived datatype, traced
 * with sst-dumpi's libdumpi for tests/data/dumpi-bin (run on 4 ranks). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  int rank, size, i;
  double buf[64] = {0}, rbuf[64] = {0}, sum = 0.0, x;
  int counts[4], displs[4], rc[4];
  MPI_Request req[4];
  MPI_Status st[4];
  MPI_Comm dup, half;
  MPI_Datatype triple;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (i = 0; i < 64; ++i) buf[i] = rank + i;
  int right = (rank + 1) % size, left = (rank + size - 1) % size;

  /* blocking ring: even ranks send first */
  if (rank % 2 == 0) {
    MPI_Send(buf, 8, MPI_DOUBLE, right, 11, MPI_COMM_WORLD);
    MPI_Recv(rbuf, 8, MPI_DOUBLE, left, 11, MPI_COMM_WORLD, &st[0]);
  } else {
    MPI_Recv(rbuf, 8, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st[0]);
    MPI_Ssend(buf, 8, MPI_DOUBLE, right, 11, MPI_COMM_WORLD);
  }
  /* halo exchange with both neighbours */
  MPI_Irecv(rbuf, 16, MPI_DOUBLE, left, 21, MPI_COMM_WORLD, &req[0]);
  MPI_Irecv(rbuf + 16, 16, MPI_DOUBLE, right, 22, MPI_COMM_WORLD, &req[1]);
  MPI_Isend(buf, 16, MPI_DOUBLE, right, 21, MPI_COMM_WORLD, &req[2]);
  /* Issend: with MPICH, two plain Isends that complete at once share one request
   * handle, which libdumpi then records twice (see the README) */
  MPI_Issend(buf + 16, 16, MPI_DOUBLE, left, 22, MPI_COMM_WORLD, &req[3]);
  MPI_Waitall(4, req, st);
  /* one request waited with MPI_Wait, one with MPI_Waitany, test loop */
  MPI_Irecv(rbuf, 4, MPI_INT, left, 31, MPI_COMM_WORLD, &req[0]);
  MPI_Isend(buf, 4, MPI_INT, right, 31, MPI_COMM_WORLD, &req[1]);
  MPI_Wait(&req[1], &st[1]);
  MPI_Waitany(1, req, &i, &st[0]);
  MPI_Irecv(rbuf, 2, MPI_LONG, right, 32, MPI_COMM_WORLD, &req[0]);
  MPI_Isend(buf, 2, MPI_LONG, left, 32, MPI_COMM_WORLD, &req[1]);
  int flag = 0;
  MPI_Testall(2, req, &flag, st);
  if (!flag) MPI_Waitall(2, req, st);
  MPI_Sendrecv(buf, 3, MPI_FLOAT, right, 41, rbuf, 3, MPI_FLOAT, left, 41, MPI_COMM_WORLD, &st[0]);

  /* collectives on world */
  x = rank;
  MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Bcast(buf, 5, MPI_INT, 1, MPI_COMM_WORLD);
  MPI_Reduce(&x, &sum, 1, MPI_DOUBLE, MPI_MAX, 2, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Gather(buf, 2, MPI_DOUBLE, rbuf, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Scatter(buf, 2, MPI_INT, rbuf, 2, MPI_INT, 3, MPI_COMM_WORLD);
  MPI_Alltoall(buf, 1, MPI_DOUBLE, rbuf, 1, MPI_DOUBLE, MPI_COMM_WORLD);
  MPI_Allgather(buf, 2, MPI_SHORT, rbuf, 2, MPI_SHORT, MPI_COMM_WORLD);
  for (i = 0; i < size; ++i) { counts[i] = i + 1; displs[i] = 4 * i; rc[i] = rank + 1; }
  int rdispls[4] = {0, 8, 16, 24};
  MPI_Alltoallv(buf, counts, displs, MPI_DOUBLE, rbuf, rc, rdispls, MPI_DOUBLE, MPI_COMM_WORLD);
  int rscounts[4] = {1, 2, 1, 2};
  MPI_Reduce_scatter(buf, rbuf, rscounts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

  /* a duplicate of world and a split into even/odd ranks (reverse order) */
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Barrier(dup);
  MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, dup);
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
  int hr;
  MPI_Comm_rank(half, &hr);
  MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, half);
  if (hr == 0) MPI_Send(buf, 6, MPI_INT, 1, 51, half);
  else MPI_Recv(rbuf, 6, MPI_INT, 0, 51, half, &st[0]);
  MPI_Bcast(buf, 3, MPI_DOUBLE, 1, half);

  /* a derived datatype: 3 doubles */
  MPI_Type_contiguous(3, MPI_DOUBLE, &triple);
  MPI_Type_commit(&triple);
  MPI_Irecv(rbuf, 2, triple, left, 61, MPI_COMM_WORLD, &req[0]);
  MPI_Isend(buf, 2, triple, right, 61, MPI_COMM_WORLD, &req[1]);
  MPI_Waitall(2, req, st);
  MPI_Type_free(&triple);
  MPI_Comm_free(&half);
  MPI_Comm_free(&dup);
  MPI_Finalize();
  if (rank == 0) printf("done\n");
  return 0;
}
