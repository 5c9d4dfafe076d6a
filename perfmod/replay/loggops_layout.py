"""The LogGOPS event loop's node layout and codes (:mod:`perfmod.replay.loggops_kernel`), without numba.

The loop's callers build its rows and read its status with these; the loop
itself is compiled (ahead of time where it can be: :mod:`perfmod.core.aot`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["ROW", "STATUS_OK", "STATUS_DEADLOCK", "STATUS_EARLY", "STATUS_UNEXPECTED"]

STATUS_OK = 0
STATUS_DEADLOCK = 1
STATUS_EARLY = 2  # an event was queued before the current time: the event queue's order would not hold
#: every operation completed, but messages arrived that no receive took (LogGOPSim lists its unexpected queues
#: and prints no times)
STATUS_UNEXPECTED = 4
_SEND, _RECV, _CALC = 1, 2, 3
_DONE = 8  # added to a row's type when the node is done
_WILD = -1
#: a node as the event loop reads it (32 bytes): ``dur`` a calc's time or a send's (n - 1) G (ps); ``tag`` the
#: 32-bit tag (-1 any); ``link`` the next node in its matching queue; ``ndeps`` the dependencies not yet met;
#: ``cls`` a send's row in the table of message parameters; ``snext`` where the node's one successor lies within
#: 127 rows after it (the usual case: a rank's next operation), that row's distance, where its two successors are
#: two rows in a row so close, minus the first's distance, else 0 (the loop then reads the successor lists: a row's
#: own cache line instead of two other arrays' at each done node)
ROW = np.dtype([("dur", np.int64), ("rank", np.int32), ("peer", np.int32), ("tag", np.int32), ("link", np.int32),
                ("ndeps", np.int32), ("kind", np.int8), ("rndv", np.int8), ("cls", np.int8), ("snext", np.int8)],
               align=True)
assert ROW.itemsize == 32
