"""numba's on-disk cache of perfmod's kernels, trusted only while every kernel source is as it was.

numba keeps a compiled function in ``__pycache__`` and trusts it while the
function's own source file is unchanged.  But a kernel compiles into itself
the kernels of other files that it calls: the LogGOPS event loop of
:mod:`perfmod.replay.loggops_kernel` holds the hooks of
:mod:`perfmod.replay.loggops_stream`, and the stream's generator holds
helpers of :mod:`perfmod.trace.formats.goal_graph`.  After an edit or a
``git pull`` that changed only a callee's file, the caller's cache kept
running the old code without a word (found 2026-11-28, when a change to
how a stream hook costs zero-byte messages did not reach the cached loop).

Here the cache of every perfmod kernel carries one stamp for all of
perfmod's modules that numba compiles from (those that import numba or
this module): the digest of their contents.  A change to any of them makes
every kernel compile once more at its first call (about a minute in all,
each first call saying so: :func:`perfmod.core.jit.first_call`); a checkout
whose sources are unchanged loads its caches as before.

Kernel modules import :func:`njit` from here rather than from numba, so
that the locators are in place before a kernel is declared.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

from numba import njit
from numba.core.caching import CacheImpl, InTreeCacheLocator, UserWideCacheLocator

__all__ = ["PACKAGE", "InTreeKernelLocator", "UserWideKernelLocator", "kernel_sources", "njit", "package_stamp"]

#: the perfmod package directory, whose kernels these locators serve
PACKAGE = Path(__file__).resolve().parents[1]
_COMPILED = re.compile(r"^\s*(?:from numba\b|import numba\b|from perfmod\.core\.kernel_cache import)", re.M)


@functools.lru_cache(maxsize=1)
def kernel_sources() -> tuple[Path, ...]:
    """perfmod's modules that numba compiles from: those that import numba or this module (found once per
    process, by their text)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if _COMPILED.search(text):
            found.append(path)
    return tuple(found)


@functools.lru_cache(maxsize=512)
def _digest(path: str, mtime_ns: int, size: int) -> bytes:
    """A file's content digest, read again only when its time stamp or size changed."""
    return hashlib.sha256(Path(path).read_bytes()).digest()


def package_stamp() -> str:
    """The digest of every kernel source's path and content: the freshness stamp of each kernel's cache."""
    h = hashlib.sha256()
    for path in kernel_sources():
        try:
            st = path.stat()
            digest = _digest(str(path), st.st_mtime_ns, st.st_size)
        except OSError:  # gone since it was found: the stamp differs from any written with it
            digest = b"missing"
        h.update(str(path.relative_to(PACKAGE)).encode())
        h.update(digest)
    return h.hexdigest()


class _PackageStamp:
    """A locator of perfmod's kernels only, whose stamp is :func:`package_stamp`."""

    def get_source_stamp(self) -> str:
        return package_stamp()

    @classmethod
    def from_function(cls, py_func, py_file):
        try:
            inside = Path(py_file).resolve().is_relative_to(PACKAGE)
        except OSError:
            return None
        return super().from_function(py_func, py_file) if inside else None


class InTreeKernelLocator(_PackageStamp, InTreeCacheLocator):
    """numba's in-tree cache (``__pycache__`` beside the source) under the package stamp."""


class UserWideKernelLocator(_PackageStamp, UserWideCacheLocator):
    """numba's user-wide cache (where the source tree is read-only) under the package stamp."""


for _cls in (UserWideKernelLocator, InTreeKernelLocator):  # tried in this order, before numba's own
    if _cls not in CacheImpl._locator_classes:
        CacheImpl._locator_classes.insert(0, _cls)
