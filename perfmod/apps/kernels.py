"""Kernel metric tables of the paper's GPU kernels from algorithmic counts (paper 000 §4.2, §5).

The paper profiles its kernels with nvprof (000 §3.3); the profiles are not
published, so perfmod derives the same kernel parameters from what each
kernel does at the paper's problem sizes.  Every kernel is described per
*work item* (a cell, a row, an atom, a halo element): thread-level
instructions by class (double-precision, of which fused multiply-adds;
integer; load/store; other), DRAM bytes, items per invocation and
invocations per iteration.  :func:`perfmod.models.roofline.from_instruction_counts`
turns them into the QRoof parameters (dominant operation ``fp_64`` when the
kernel has double-precision instructions, else ``integer``).

Assumptions common to all kernels (the counts are estimates, not
measurements):

- double precision throughout (Jacobi2D and MiniFE use ``double``; miniMD's
  default ``MMD_float`` is ``double``);
- DRAM traffic is compulsory traffic with perfect cache reuse of
  neighbouring reads (a stencil reads its grid once), except strided accesses
  (Jacobi2D's east/west halo columns), which move a whole 32-byte sector per
  8-byte element;
- integer instructions are index arithmetic and bounds checks (2-3 per
  address), "other" are branches, predicates, synchronisation and exit;
- the slowest rank is an interior one (all halo faces exchanged), the
  representative process of 000 §5.

Jacobi2D (000 §4.2, Eq. 6; ``block`` = 16,384: a 16,384^2 block of doubles)
    PACK / UNPACK: 4 halo faces of ``block`` elements; north/south rows are
    contiguous (8 B read + 8 B written per element), east/west columns
    strided (32 B + 8 B); per element 4 integer, 2 load/store, 2 other
    instructions.  STENCIL: per cell 3 DADD + 1 DFMA (x 0.25 + centre) + 1
    DMUL (x 0.5) = 5 FP64 instructions (6 flops), 10 integer, 5 loads + 1
    store, 2 other; 16 B (read once, write once).  REDUCE: per cell 1 FP64
    add (the shared-memory atomic), 8 integer, 2 load/store, 3 other; 8 B.
    One invocation each per iteration.
MiniFE (000 §4.2; ``box`` = 200: 200^3 rows per rank, 27-point operator, CSR)
    DOT: per row 1 DFMA, 2 loads, 4 integer, 2 other; 16 B; 2 per CG
    iteration.  WAXPBY (w = a x + b y): 1 DMUL + 1 DFMA, 2 loads + 1 store,
    4 integer, 2 other; 24 B; 3 per iteration.  MATVEC: 27 nonzeros per row,
    each 1 DFMA, 3 loads (value, column index, x[col]) and 3 integer; per row
    2 loads of the row pointers + 1 store, 4 integer, 3 other; DRAM 27 x 12 B
    (value + index) + 8 B (x, reused from cache) + 8 B (y) + 4 B (row
    pointer) = 344 B per row; 1 per iteration.
MiniMD (000 §4.2, ``in.lj.miniMD``; ``cells`` = 64: 64^3 FCC unit cells =
    1,048,576 atoms per rank, 100 steps, no re-neighbouring)
    INIT: per atom 6 DFMA (v += dtf f, x += dt v), 5 loads + 2 stores (3-vectors
    as 3 doubles each: counted per vector), 4 integer, 2 other; 120 B.  FIN:
    3 DFMA, 2 loads + 1 store, 4 integer, 2 other; 72 B.  PACK / UNPACK: the
    border atoms of :func:`perfmod.apps.minimd.minimd_border_atoms` (181,611
    per exchange with 64 cells), one invocation per swap, 6 swaps in the
    forward and 6 in the reverse communication: 12 invocations per step; per
    atom 3 DADD (periodic image shift; none in UNPACK), 3 loads + 3 stores + 1
    index load, 6 integer, 2 other; 52 B (index 4 + 24 read + 24 written).
    FORCE (Lennard-Jones, full neighbour list): neighbours within cutoff +
    skin ``4/3 pi (2.8)^3 rho`` = 77.6, of which within the cutoff ``4/3 pi
    2.5^3 rho`` = 55.3; per neighbour 3 DADD + 1 DMUL + 2 DFMA (distance),
    4 integer, 2 loads (index, position), 1 other; per neighbour within the
    cutoff 12 more FP64 instructions of which 4 DFMA (reciprocal, r^-6, force,
    3 accumulations) and 1 other; per atom 4 B per neighbour (the list) + 24 B
    position + 24 B force written.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfmod.models.roofline.metrics import from_instruction_counts

__all__ = [
    "APP_KERNELS",
    "KernelCounts",
    "SECTOR",
    "INT",
]

APP_KERNELS: dict[str, tuple[str, ...]] = {
    "jacobi2d": ("PACK", "UNPACK", "STENCIL", "REDUCE"),
    "minife": ("DOT", "WAXPBY", "MATVEC"),
    "minimd": ("INIT", "PACK", "UNPACK", "FORCE", "FIN"),
}
"""The kernels QRoof models for each proxy (000 §4.2, §5)."""

SECTOR = 32  # bytes moved by DRAM for a strided 8-byte access
INT = 4  # bytes of an int index


@dataclass(frozen=True)
class KernelCounts:
    """Algorithmic counts of one kernel (per work item unless said otherwise).

    Attributes
    ----------
    kernel : str
    items : float
        Work items per invocation.
    invocations : int
        Invocations per iteration.
    fp_inst, fma_inst, int_inst, ldst_inst, other_inst : float
        Thread-level instructions per item: double-precision (FMAs
        included), fused multiply-adds, integer, load/store, other.
    dram_bytes : float
        DRAM bytes per item (B).
    """

    kernel: str
    items: float
    invocations: int
    fp_inst: float
    fma_inst: float
    int_inst: float
    ldst_inst: float
    other_inst: float
    dram_bytes: float

    def row(self) -> dict:
        """The kernel-table row (totals per iteration: items x invocations)."""
        n = self.items * self.invocations
        dominant = "fp_64" if self.fp_inst > 0 else "integer"
        compute = self.fp_inst if self.fp_inst > 0 else self.int_inst
        total = self.fp_inst + self.int_inst + self.ldst_inst + self.other_inst
        return from_instruction_counts(dominant, compute * n, self.fma_inst * n, self.ldst_inst * n, total * n,
                                       self.dram_bytes * n, count=self.invocations, kernel=self.kernel)


def _positive(name: str, value: float) -> None:
    if not value > 0:
        raise ValueError(f"{name} must be positive, got {value!r}")


