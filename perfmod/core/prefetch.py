"""A software prefetch for numba kernels: ``prefetch(a, i)`` asks the CPU to bring ``a[i]`` (the first element
of row ``i`` of a 2-D array) into cache without waiting for it.

The replay's event loop reads each rank's next event rows when it steps the rank, and one load depends on the
one before (the rank's position, then its event's row, then the row's partner): every cache miss costs a full
memory latency, which made the loop's cost per event grow with the rank count (twice as slow at 16,384 ranks
as at 1,536).  Where the loop knows which rank steps a few pops later (its run queue), it prefetches that rank's
rows, and the misses overlap instead.  A prefetch never faults (an address past an array's end is allowed) and
changes no value: only the timing.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.extending import intrinsic

__all__ = ["prefetch"]


@intrinsic
def prefetch(typingctx, arr, idx):  # noqa: ARG001 - numba's intrinsic signature
    """``llvm.prefetch`` (read, high locality, data cache) of the address of ``arr[idx]`` (``arr[idx, 0]`` for a
    2-D array); no bounds check, no effect on values."""
    if not isinstance(arr, types.Array) or not isinstance(idx, types.Integer):
        return None
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        aryty, idxty = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        ind = context.cast(builder, args[1], idxty, types.intp)
        inds = [ind] + [context.get_constant(types.intp, 0)] * (aryty.ndim - 1)
        ptr = cgutils.get_item_pointer2(context, builder, data=ary.data,
                                        shape=cgutils.unpack_tuple(builder, ary.shape, aryty.ndim),
                                        strides=cgutils.unpack_tuple(builder, ary.strides, aryty.ndim),
                                        layout=aryty.layout, inds=inds)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                            "llvm.prefetch.p0i8")
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen
