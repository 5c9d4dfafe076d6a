"""The bit length of an integer in numba kernels as one instruction: ``bit_length(x)``, LLVM's ``ctlz``.

The ``loggp`` event queue files every event by the highest bit in which its time differs from the
current one (:mod:`perfmod.replay.loggops_kernel`: a push, and each move when a bucket is refilled); a
binary search over the bits took six data-dependent branches per event, where ``ctlz`` (``lzcnt`` or
``bsr`` on x86) takes none (a 4,096-rank x 20 Jacobi2D trace's replay 2.17-2.26 -> 1.78-1.99 CPU-s,
16,384 x 10 6.41 -> 5.75, both run at once, one core each, 2026-11-28).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.extending import intrinsic

__all__ = ["bit_length"]


@intrinsic
def bit_length(typingctx, x):  # noqa: ARG001 - numba's intrinsic signature
    """The number of bits of the int64 ``x`` (Python's ``int.bit_length`` for ``x >= 0``: 0 for 0, 64 for a
    negative ``x``)."""
    if not isinstance(x, types.Integer):
        return None
    sig = types.int64(x)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        v = context.cast(builder, args[0], signature.args[0], types.int64)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, [i64, ir.IntType(1)]),
                                            "llvm.ctlz.i64")
        zeros = builder.call(fn, [v, ir.IntType(1)(0)])
        return builder.sub(i64(64), zeros)

    return sig, codegen
