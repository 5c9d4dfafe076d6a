"""Record layouts of DUMPI's binary trace format (sst-dumpi ``libundumpi``), as data.

The stream of a DUMPI ``.bin`` file is a sequence of records, one per MPI
call: a big-endian ``uint16`` function label, then a common prefix (config
mask, thread, times, PAPI counters; see :mod:`perfmod.trace.formats.dumpi_bin_scan`)
and then the call's arguments.  Records carry no length, so a reader must
know the argument layout of every label to step over a call it does not
model.  :data:`RECORDS` lists, for each label in the order of sst-dumpi's
``dumpi_function`` enumeration (``dumpi/common/funclabels.h``; label 0 is
``MPI_Send``, 290 ``DUMPI_ALL_FUNCTIONS``, 293 the end of the stream), the
name ``dumpi2ascii`` prints for the call and its argument layout as one
character per field, read off the ``dumpi_read_*`` functions of
``dumpi/common/dumpiio.c`` (sst-dumpi 13.0; unchanged in layout since the
2016 import, DUMPI format version 0.6.9 and later).  ``None``: the format
defines no record for the label (it cannot occur in a valid stream).

Field characters (all integers big-endian; counts are signed 32-bit, and a
count <= 0 means no elements, as ``libundumpi`` reads them):

=====  =======================================================================
``b``  8-bit integer (op, ordering, thread level, ...)
``h``  16-bit integer (datatype, communicator, group, info, file, window, ...)
``i``  32-bit integer (count, rank, tag, request, ...)
``k``  32-bit integer: the caller's rank in the communicator (``commrank``)
``o``  32-bit integer: the root
``q``  64-bit integer (offsets)
``I``  count, then that many 32-bit integers
``H``  count, then that many 16-bit integers
``B``  count, then that many 8-bit integers
``J``  count, then that many ``I`` arrays
``c``  count, then that many bytes (a string)
``C``  count, then that many ``c`` strings
``D``  count, then that many ``C`` string arrays
``s``  statuses, present only when the config mask records them: count,
       then per status bytes (32), source (32), cancelled (8), error (8), tag (32)
``a``  ``argc`` (32-bit), then ``argc`` ``c`` strings (``MPI_Init``)
``?``  the next field is present only when ``k`` equals ``o`` (root-only
       arguments of ``MPI_Gather``, ``MPI_Scatter``, ``MPI_Comm_spawn``, ...)
=====  =======================================================================
"""

from __future__ import annotations

__all__ = ["RECORDS", "LABEL", "END_OF_STREAM", "ALL_FUNCTIONS", "FIELD_CODES"]

#: ``(name, layout)`` per function label (see the module docstring).
RECORDS: tuple[tuple[str, str | None], ...] = (
    ('MPI_Send', 'ihiih'), ('MPI_Recv', 'ihiihs'), ('MPI_Get_count', 'shi'), ('MPI_Bsend', 'ihiih'),
    ('MPI_Ssend', 'ihiih'), ('MPI_Rsend', 'ihiih'), ('MPI_Buffer_attach', 'i'), ('MPI_Buffer_detach', 'i'),
    ('MPI_Isend', 'ihiihi'), ('MPI_Ibsend', 'ihiihi'), ('MPI_Issend', 'ihiihi'), ('MPI_Irsend', 'ihiihi'),
    ('MPI_Irecv', 'ihiihi'), ('MPI_Wait', 'is'), ('MPI_Test', 'iis'), ('MPI_Request_free', 'i'),
    ('MPI_Waitany', 'iIis'), ('MPI_Testany', 'iIiis'), ('MPI_Waitall', 'iIs'), ('MPI_Testall', 'iIis'),
    ('MPI_Waitsome', 'iIiIs'), ('MPI_Testsome', 'iIiIs'), ('MPI_Iprobe', 'iihis'), ('MPI_Probe', 'iihs'),
    ('MPI_Cancel', 'i'), ('MPI_Test_cancelled', 'si'), ('MPI_Send_init', 'ihiihi'), ('MPI_Bsend_init', 'ihiihi'),
    ('MPI_Ssend_init', 'ihiihi'), ('MPI_Rsend_init', 'ihiihi'), ('MPI_Recv_init', 'ihiihi'), ('MPI_Start', 'i'),
    ('MPI_Startall', 'iI'), ('MPI_Sendrecv', 'ihiiihiihs'), ('MPI_Sendrecv_replace', 'ihiiiihs'),
    ('MPI_Type_contiguous', 'ihh'), ('MPI_Type_vector', 'iiihh'), ('MPI_Type_hvector', 'iiihh'),
    ('MPI_Type_indexed', 'iIIhh'), ('MPI_Type_hindexed', 'iIIhh'), ('MPI_Type_struct', 'iIIHh'),
    ('MPI_Address', 'i'), ('MPI_Type_extent', 'hi'), ('MPI_Type_size', 'hi'), ('MPI_Type_lb', 'hi'),
    ('MPI_Type_ub', 'hi'), ('MPI_Type_commit', 'h'), ('MPI_Type_free', 'h'), ('MPI_Get_elements', 'shi'),
    ('MPI_Pack', 'ihiiih'), ('MPI_Unpack', 'iiiihh'), ('MPI_Pack_size', 'ihhi'), ('MPI_Barrier', 'h'),
    ('MPI_Bcast', 'ihoh'), ('MPI_Gather', 'kihoh?i?h'), ('MPI_Gatherv', 'kiihoh?I?Ih'), ('MPI_Scatter', 'kihoh?i?h'),
    ('MPI_Scatterv', 'kihihoh?I?I'), ('MPI_Allgather', 'ihihh'), ('MPI_Allgatherv', 'iihIIhh'),
    ('MPI_Alltoall', 'ihihh'), ('MPI_Alltoallv', 'iIIhIIhh'), ('MPI_Reduce', 'ihboh'), ('MPI_Op_create', 'ib'),
    ('MPI_Op_free', 'b'), ('MPI_Allreduce', 'ihbh'), ('MPI_Reduce_scatter', 'iIhbh'), ('MPI_Scan', 'ihbh'),
    ('MPI_Group_size', 'hi'), ('MPI_Group_rank', 'hi'), ('MPI_Group_translate_ranks', 'hiIhI'),
    ('MPI_Group_compare', 'hhb'), ('MPI_Comm_group', 'hh'), ('MPI_Group_union', 'hhh'),
    ('MPI_Group_intersection', 'hhh'), ('MPI_Group_difference', 'hhh'), ('MPI_Group_incl', 'hiIh'),
    ('MPI_Group_excl', 'hiIh'), ('MPI_Group_range_incl', 'hiJh'), ('MPI_Group_range_excl', 'hiJh'),
    ('MPI_Group_free', 'h'), ('MPI_Comm_size', 'hi'), ('MPI_Comm_rank', 'hi'), ('MPI_Comm_compare', 'hhb'),
    ('MPI_Comm_dup', 'hh'), ('MPI_Comm_create', 'hhh'), ('MPI_Comm_split', 'hiih'), ('MPI_Comm_free', 'h'),
    ('MPI_Comm_test_inter', 'hi'), ('MPI_Comm_remote_size', 'hi'), ('MPI_Comm_remote_group', 'hh'),
    ('MPI_Intercomm_create', 'hihiih'), ('MPI_Intercomm_merge', 'hih'), ('MPI_Keyval_create', 'h'),
    ('MPI_Keyval_free', 'h'), ('MPI_Attr_put', 'hi'), ('MPI_Attr_get', 'hii'), ('MPI_Attr_delete', 'hi'),
    ('MPI_Topo_test', 'hb'), ('MPI_Cart_create', 'hiIIih'), ('MPI_Dims_create', 'iiII'),
    ('MPI_Graph_create', 'ihiIIih'), ('MPI_Graphdims_get', 'hii'), ('MPI_Graph_get', 'iihiiII'),
    ('MPI_Cartdim_get', 'hi'), ('MPI_Cart_get', 'ihiIII'), ('MPI_Cart_rank', 'ihIi'), ('MPI_Cart_coords', 'ihiiI'),
    ('MPI_Graph_neighbors_count', 'hii'), ('MPI_Graph_neighbors', 'ihiiI'), ('MPI_Cart_shift', 'hiiii'),
    ('MPI_Cart_sub', 'ihIh'), ('MPI_Cart_map', 'hiIIi'), ('MPI_Graph_map', 'ihiIIi'),
    ('MPI_Get_processor_name', 'ci'), ('MPI_Get_version', 'ii'), ('MPI_Errhandler_create', 'h'),
    ('MPI_Errhandler_set', 'hh'), ('MPI_Errhandler_get', 'hh'), ('MPI_Errhandler_free', 'h'),
    ('MPI_Error_string', 'ici'), ('MPI_Error_class', 'ii'), ('MPI_Wtime', ''), ('MPI_Wtick', ''), ('MPI_Init', 'a'),
    ('MPI_Finalize', ''), ('MPI_Initialized', 'i'), ('MPI_Abort', 'hi'), ('MPI_Pcontrol', None),
    ('MPI_Close_port', 'c'), ('MPI_Comm_accept', 'chohh'), ('MPI_Comm_connect', 'chohh'),
    ('MPI_Comm_disconnect', 'h'), ('MPI_Comm_get_parent', 'h'), ('MPI_Comm_join', 'ih'),
    ('MPI_Comm_spawn', 'kohh?c?C?i?h?I'), ('MPI_Comm_spawn_multiple', 'ikohh?i?C?D?I?H?I'),
    ('MPI_Lookup_name', 'chc'), ('MPI_Open_port', 'hc'), ('MPI_Publish_name', 'chc'), ('MPI_Unpublish_name', 'chc'),
    ('MPI_Accumulate', 'ihiiihbh'), ('MPI_Get', 'ihiiihh'), ('MPI_Put', 'ihiiihh'), ('MPI_Win_complete', 'h'),
    ('MPI_Win_create', 'iihhh'), ('MPI_Win_fence', 'bh'), ('MPI_Win_free', 'h'), ('MPI_Win_get_group', 'hh'),
    ('MPI_Win_lock', 'bibh'), ('MPI_Win_post', 'hbh'), ('MPI_Win_start', 'hbh'), ('MPI_Win_test', 'hi'),
    ('MPI_Win_unlock', 'ih'), ('MPI_Win_wait', 'h'), ('MPI_Alltoallw', 'iIIHIIHh'), ('MPI_Exscan', 'ihbh'),
    ('MPI_Add_error_class', 'i'), ('MPI_Add_error_code', 'ii'), ('MPI_Add_error_string', 'ic'),
    ('MPI_Comm_call_errhandler', 'hi'), ('MPI_Comm_create_keyval', 'h'), ('MPI_Comm_delete_attr', 'hh'),
    ('MPI_Comm_free_keyval', 'h'), ('MPI_Comm_get_attr', 'hhi'), ('MPI_Comm_get_name', 'hci'),
    ('MPI_Comm_set_attr', 'hh'), ('MPI_Comm_set_name', 'hc'), ('MPI_File_call_errhandler', 'hi'),
    ('MPI_Grequest_complete', 'i'), ('MPI_Grequest_start', 'i'), ('MPI_Init_thread', 'abb'),
    ('MPI_Is_thread_main', 'i'), ('MPI_Query_thread', 'b'), ('MPI_Status_set_cancelled', 'si'),
    ('MPI_Status_set_elements', 'shi'), ('MPI_Type_create_keyval', 'h'), ('MPI_Type_delete_attr', 'hh'),
    ('MPI_Type_dup', 'hh'), ('MPI_Type_free_keyval', 'h'), ('MPI_Type_get_attr', 'hhi'),
    ('MPI_Type_get_contents', 'iiihiiiIIH'), ('MPI_Type_get_envelope', 'hiiib'), ('MPI_Type_get_name', 'hci'),
    ('MPI_Type_set_attr', 'hh'), ('MPI_Type_set_name', 'hc'), ('MPI_Type_match_size', 'bih'),
    ('MPI_Win_call_errhandler', 'hi'), ('MPI_Win_create_keyval', 'h'), ('MPI_Win_delete_attr', 'hh'),
    ('MPI_Win_free_keyval', 'h'), ('MPI_Win_get_attr', 'hhi'), ('MPI_Win_get_name', 'hci'),
    ('MPI_Win_set_attr', 'hh'), ('MPI_Win_set_name', 'hc'), ('MPI_Alloc_mem', 'ih'),
    ('MPI_Comm_create_errhandler', 'h'), ('MPI_Comm_get_errhandler', 'hh'), ('MPI_Comm_set_errhandler', 'hh'),
    ('MPI_File_create_errhandler', 'h'), ('MPI_File_get_errhandler', 'hh'), ('MPI_File_set_errhandler', 'hh'),
    ('MPI_Finalized', 'i'), ('MPI_Free_mem', ''), ('MPI_Get_address', 'i'), ('MPI_Info_create', 'h'),
    ('MPI_Info_delete', 'hc'), ('MPI_Info_dup', 'hh'), ('MPI_Info_free', 'h'), ('MPI_Info_get', 'hcici'),
    ('MPI_Info_get_nkeys', 'hi'), ('MPI_Info_get_nthkey', 'hic'), ('MPI_Info_get_valuelen', 'hcii'),
    ('MPI_Info_set', 'hcc'), ('MPI_Pack_external', 'cihiii'), ('MPI_Pack_external_size', 'cihi'),
    ('MPI_Request_get_status', 'iis'), ('MPI_Type_create_darray', 'iiiIBIIbhh'),
    ('MPI_Type_create_hindexed', 'iIIhh'), ('MPI_Type_create_hvector', 'iiihh'),
    ('MPI_Type_create_indexed_block', 'iiIhh'), ('MPI_Type_create_resized', 'hiih'),
    ('MPI_Type_create_struct', 'iIIHh'), ('MPI_Type_create_subarray', 'iIIIbhh'), ('MPI_Type_get_extent', 'hii'),
    ('MPI_Type_get_true_extent', 'hii'), ('MPI_Unpack_external', 'ciiiih'), ('MPI_Win_create_errhandler', 'h'),
    ('MPI_Win_get_errhandler', 'hh'), ('MPI_Win_set_errhandler', 'hh'), ('MPI_File_open', 'hcbhh'),
    ('MPI_File_close', 'h'), ('MPI_File_delete', 'ch'), ('MPI_File_set_size', 'hq'), ('MPI_File_preallocate', 'hq'),
    ('MPI_File_get_size', 'hq'), ('MPI_File_get_group', 'hh'), ('MPI_File_get_amode', 'hb'),
    ('MPI_File_set_info', 'hh'), ('MPI_File_get_info', 'hh'), ('MPI_File_set_view', 'hqhhch'),
    ('MPI_File_get_view', 'hqhhc'), ('MPI_File_read_at', 'hqihs'), ('MPI_File_read_at_all', 'hqihs'),
    ('MPI_File_write_at', 'hqihs'), ('MPI_File_write_at_all', 'hqihs'), ('MPI_File_iread_at', 'hqihi'),
    ('MPI_File_iwrite_at', 'hqihi'), ('MPI_File_read', 'hihs'), ('MPI_File_read_all', 'hihs'),
    ('MPI_File_write', 'hihs'), ('MPI_File_write_all', 'hihs'), ('MPI_File_iread', 'hihi'),
    ('MPI_File_iwrite', 'hihi'), ('MPI_File_seek', 'hqb'), ('MPI_File_get_position', 'hq'),
    ('MPI_File_get_byte_offset', 'hqq'), ('MPI_File_read_shared', 'hihs'), ('MPI_File_write_shared', 'hihs'),
    ('MPI_File_iread_shared', 'hihi'), ('MPI_File_iwrite_shared', 'hihi'), ('MPI_File_read_ordered', 'hihs'),
    ('MPI_File_write_ordered', 'hihs'), ('MPI_File_seek_shared', 'hqb'), ('MPI_File_get_position_shared', 'hq'),
    ('MPI_File_read_at_all_begin', 'hqih'), ('MPI_File_read_at_all_end', 'hs'),
    ('MPI_File_write_at_all_begin', 'hqih'), ('MPI_File_write_at_all_end', 'hs'), ('MPI_File_read_all_begin', 'hih'),
    ('MPI_File_read_all_end', 'hs'), ('MPI_File_write_all_begin', 'hih'), ('MPI_File_write_all_end', 'hs'),
    ('MPI_File_read_ordered_begin', 'hih'), ('MPI_File_read_ordered_end', 'hs'),
    ('MPI_File_write_ordered_begin', 'hih'), ('MPI_File_write_ordered_end', 'hs'),
    ('MPI_File_get_type_extent', 'hhi'), ('MPI_Register_datarep', 'c'), ('MPI_File_set_atomicity', 'hi'),
    ('MPI_File_get_atomicity', 'hi'), ('MPI_File_sync', 'h'), ('MPIO_Test', 'iis'), ('MPIO_Wait', 'is'),
    ('MPIO_Testall', 'iIis'), ('MPIO_Waitall', 'iIs'), ('MPIO_Testany', 'iIiis'), ('MPIO_Waitany', 'iIis'),
    ('MPIO_Waitsome', 'iIiIs'), ('MPIO_Testsome', 'iIiIs'), ('ALL_FUNCTIONS', None), ('Function_enter', 'q'),
    ('Function_exit', 'q'),
)
ALL_FUNCTIONS = 290  #: sentinel label after the last MPI function (no record)
END_OF_STREAM = 293  #: label that ends the call stream (written before the header record)
#: Label of each name (``"MPI_Isend"`` -> 8).
LABEL: dict[str, int] = {name: i for i, (name, _) in enumerate(RECORDS)}
#: Field character -> token code used by the scanner (0 ends a layout).
FIELD_CODES: dict[str, int] = {c: i + 1 for i, c in enumerate("bhikoqIHBJcCDsa?")}

assert len(RECORDS) == END_OF_STREAM and LABEL["MPI_Isend"] == 8 and LABEL["MPIO_Testsome"] == 289
