/* perfmod test program: calls perfmod does not model, between modelled ones,
 * so that a reader must step over their records exactly (strings, arrays,
 * statuses, 2-D arrays, root-only fields); traced with sst-dumpi's libdumpi
 * for tests/data/dumpi-bin (run on 4 ranks). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  int rank, size, flag, count, len, i, dims[2] = {0, 0}, periods[2] = {1, 0}, coords[2];
  char name[MPI_MAX_PROCESSOR_NAME], value[64];
  double buf[16] = {0}, rbuf[64] = {0}, t;
  int blocklens[2] = {1, 2}, rcounts[4], displs[4], ranges[1][3] = {{0, 2, 2}}, tr[2];
  MPI_Aint disp[2] = {0, 8};
  MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE}, st_type, vec, idx;
  MPI_Status st;
  MPI_Request req;
  MPI_Comm cart, row;
  MPI_Group wg, even;
  MPI_Info info;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Get_processor_name(name, &len);
  t = MPI_Wtime();
  MPI_Info_create(&info);
  MPI_Info_set(info, "perfmod", "dumpi");
  MPI_Info_get(info, "perfmod", 63, value, &flag);
  MPI_Info_free(&info);
  MPI_Type_create_struct(2, blocklens, disp, types, &st_type);
  MPI_Type_commit(&st_type);
  MPI_Type_vector(2, 3, 4, MPI_DOUBLE, &vec);
  MPI_Type_commit(&vec);
  int ib[2] = {1, 1}, id[2] = {0, 3};
  MPI_Type_indexed(2, ib, id, MPI_INT, &idx);
  MPI_Type_commit(&idx);
  dims[0] = 2; dims[1] = size / 2;  /* not MPI_Dims_create: the text reader cannot read its "dims.in" field */
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
  MPI_Cart_coords(cart, rank, 2, coords);
  int remain[2] = {0, 1};
  MPI_Cart_sub(cart, remain, &row);
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  MPI_Group_range_incl(wg, 1, ranges, &even);
  int q[2] = {0, 1};
  MPI_Group_translate_ranks(even, 2, q, wg, tr);
  /* modelled calls in between: a vector type and a Cart_create communicator */
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  MPI_Irecv(rbuf, 1, vec, left, 5, MPI_COMM_WORLD, &req);
  MPI_Send(buf, 1, vec, right, 5, MPI_COMM_WORLD);
  MPI_Wait(&req, &st);
  MPI_Get_count(&st, MPI_DOUBLE, &count);
  MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, &st);
  if (rank == 0) MPI_Send(buf, 2, MPI_INT, 1, 6, cart);
  if (rank == 1) { MPI_Probe(0, 6, cart, &st); MPI_Recv(rbuf, 2, MPI_INT, 0, 6, cart, &st); }
  for (i = 0; i < size; ++i) { rcounts[i] = 2; displs[i] = 2 * i; }
  MPI_Gatherv(buf, 2, MPI_DOUBLE, rbuf, rcounts, displs, MPI_DOUBLE, 2, MPI_COMM_WORLD);
  MPI_Allgatherv(buf, 2, MPI_DOUBLE, rbuf, rcounts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
  MPI_Scan(&t, rbuf, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&t, rbuf, 1, MPI_DOUBLE, MPI_MAX, cart);  /* row (Cart_sub) is not followed */
  MPI_Bcast(buf, 1, st_type, 0, MPI_COMM_WORLD);
  MPI_Group_free(&even);
  MPI_Group_free(&wg);
  MPI_Comm_free(&row);
  MPI_Comm_free(&cart);
  MPI_Type_free(&idx);
  MPI_Type_free(&vec);
  MPI_Type_free(&st_type);
  MPI_Finalize();
  if (rank == 0) printf("done\n");
  return 0;
}
