"""What failed, in a few lines: the notebook's own exception instead of papermill's wrapper.

A study that fails inside its notebook reaches ``perfmod run`` as papermill's
``PapermillExecutionError``, whose text is a rule of dashes followed by the
kernel's coloured traceback.  :func:`describe` turns it into the exception
the notebook raised (type and whole message), the cell it came from and the
line of that cell; any other error is its type and its whole message (a
multi-line message, such as the replay's deadlock report, is kept whole).
``perfmod run`` prints it, and a sweep records it as the point's ``error``.
"""

from __future__ import annotations

import re
import traceback as tb

__all__ = ["describe", "notebook_traceback"]

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_ARROW = re.compile(r"^-+>\s*(\d+)\s?(.*)$")


def _strip(text: str) -> str:
    return _ANSI.sub("", text)


def _failed_line(err: BaseException) -> str:
    """``line N: code`` of the notebook cell where the exception was raised (the traceback's first arrow)."""
    for frame in getattr(err, "traceback", None) or []:
        for line in _strip(frame).splitlines():
            m = _ARROW.match(line.strip())
            if m:
                return f"line {m.group(1)}: {m.group(2).strip()}"  # the outermost frame: the cell
    return ""


def describe(err: BaseException) -> str:
    """The error as a user reads it: ``Type: message`` (whole) and, from a notebook, the cell and its line."""
    if type(err).__name__ == "PapermillExecutionError" and hasattr(err, "ename"):
        cell = f"cell {err.cell_index}" + (f" (In [{err.exec_count}])" if err.exec_count is not None else "")
        line = _failed_line(err)
        if not line and getattr(err, "source", ""):
            line = "starts: " + err.source.strip().splitlines()[0]
        message = _strip(str(err.evalue)).strip()
        head = f"{err.ename}: {message}" if message else err.ename
        return f"{head}\n  in the executed notebook's {cell}" + (f", {line}" if line else "")
    message = str(err).strip()
    return f"{type(err).__name__}: {message}" if message else type(err).__name__


def notebook_traceback(err: BaseException) -> str:
    """The traceback to show on ``--debug``: the kernel's (a notebook error), else Python's."""
    if type(err).__name__ == "PapermillExecutionError" and getattr(err, "traceback", None):
        return _strip("\n".join(err.traceback))
    return "".join(tb.format_exception(err)).rstrip()
