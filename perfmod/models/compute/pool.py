"""Regressor pool and term encodings of Eiger, plus Extra-P normal-form terms (paper 004 §IV-C).

Eiger fits each cluster with a linear combination of *regressors* taken from a
pool F (paper 004 §IV-C).  The pool and its encodings follow gtcasl/eiger
(``eiger/LinearRegression.py``, ``documentation/modelformat.tex``):

=========  ===================  ================================  ==============================
encoding   JSON ``function``    value                             when the input is 0
=========  ===================  ================================  ==============================
``0``      ``identity``         1                                 1
``1 i n``  ``power``            ``|x_i|^n``                       1 (Eiger's convention)
``2 i j``  ``product``          ``x_i * x_j``                     0
``3 i``    ``sqrt``             ``sqrt(|x_i|)``                   0
``4 i``    ``log``              ``log2|x_i|``                     1 (Eiger's convention)
``5 i j``  ``quotient``         ``x_i / x_j``                     inf (dropped from the pool)
=========  ===================  ================================  ==============================

Eiger's training pool per input column, in its order: ``|x|^-2, |x|^-1,
|x|^-1/2, |x|^1/2, |x|, |x|^2, log2|x|``, then products ``x_i x_j`` (j >= i)
and quotients ``x_i/x_j``, ``x_j/x_i`` (j > i), after a leading identity.
Eiger's pool also holds ``x_i/x_i`` twice; being the identity again, it is left out.

perfmod mode adds the terms of Extra-P's performance-model normal form,
``|x|^(i/j) * log2(|x|)^k`` (``kind="epm"``), and their products over several
parameters, ``prod_l |x_l|^(i_l/j_l) * log2(|x_l|)^(k_l)`` (``kind="pmnf"``, Extra-P's
multi-parameter normal form); they have no Eiger encoding.  Every term says its
order in each input (:meth:`Term.order`: exponent and log power).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = [
    "Term",
    "EIGER_FUNCTIONS",
    "eiger_pool",
    "normal_form_pool",
    "EPM_EXPONENTS",
    "evaluate_terms",
]

_KIND_CODE = {"identity": 0, "power": 1, "product": 2, "sqrt": 3, "log": 4, "quotient": 5}
_CODE_KIND = {v: k for k, v in _KIND_CODE.items()}

#: The regressor families of Eiger's ``train --regressor-functions`` option, all on by default.
EIGER_FUNCTIONS = ("inv_quadratic", "inv_linear", "inv_sqrt", "sqrt", "linear", "quadratic", "log", "cross", "div")
_POWER_OF = {"inv_quadratic": -2, "inv_linear": -1, "inv_sqrt": -0.5, "sqrt": 0.5, "linear": 1, "quadratic": 2}

#: Exponents i/j of Extra-P's default search space (paper 004 extension; Extra-P's normal form).
EPM_EXPONENTS = tuple(
    sorted({Fraction(a, b) for b in (1, 2, 3, 4) for a in range(0, 3 * b + 1) if Fraction(a, b) <= 3}
           | {Fraction(4, 5)})  # Extra-P's default space also holds 4/5
)


def _fmt_number(value: float) -> str:
    """Format an exponent the way Python's ``str`` does for Eiger's ints and floats."""
    v = float(value)
    return str(int(v)) if v.is_integer() else repr(v)


@dataclass(frozen=True)
class Term:
    """One regressor: a function of the input columns.

    Parameters
    ----------
    kind : str
        ``identity``, ``power``, ``product``, ``sqrt``, ``log``, ``quotient``
        (Eiger's encodings) or ``epm`` (``|x_i|^exponent * log2(|x_i|)^logpow``).
    i, j : int
        Input column indices (``j`` for products and quotients).
    exponent : float
        Power of ``power`` and ``epm`` terms.
    logpow : int
        Power of the logarithm of an ``epm`` term.
    factors : tuple of (int, float, int)
        Factors ``(input, exponent, log power)`` of a ``pmnf`` term, the product
        ``prod |x_input|^exponent * log2(|x_input|)^logpow`` (sorted by input).
    """

    kind: str
    i: int = -1
    j: int = -1
    exponent: float = 1.0
    logpow: int = 0
    factors: tuple[tuple[int, float, int], ...] = ()

    @classmethod
    def product_of(cls, factors: Sequence[tuple[int, float, int]]) -> Term:
        """Multi-parameter normal-form term ``prod |x_i|^e * log2(|x_i|)^k`` of ``(i, e, k)`` factors.

        Factors of order ``(0, 0)`` are dropped; one factor left gives an ``epm`` term, none the identity.
        """
        fs = tuple(sorted((int(i), float(e), int(k)) for i, e, k in factors if not (float(e) == 0 and int(k) == 0)))
        if len({f[0] for f in fs}) != len(fs):
            raise ValueError(f"a normal-form product names an input twice: {fs}")
        if not fs:
            return cls("identity")
        if len(fs) == 1:
            return cls("epm", fs[0][0], exponent=fs[0][1], logpow=fs[0][2])
        return cls("pmnf", factors=fs)

    def order(self, i: int) -> tuple[float, int]:
        """Order of the term in input ``i``: ``(exponent, log power)``, e.g. ``(1.5, 1)`` for ``x^(3/2) log2 x``.

        ``(0, 0)`` when the term does not depend on input ``i``; a quotient's divisor has exponent -1.
        """
        if self.kind == "pmnf":
            for k, e, lp in self.factors:
                if k == i:
                    return (e, lp)
            return (0.0, 0)
        if self.kind == "epm":
            return (float(self.exponent), int(self.logpow)) if self.i == i else (0.0, 0)
        if self.kind == "power":
            return (float(self.exponent), 0) if self.i == i else (0.0, 0)
        if self.kind == "log":
            return (0.0, 1) if self.i == i else (0.0, 0)
        if self.kind == "sqrt":
            return (0.5, 0) if self.i == i else (0.0, 0)
        if self.kind == "product":
            return (float((self.i == i) + (self.j == i)), 0)
        if self.kind == "quotient":
            return (float((self.i == i) - (self.j == i)), 0)
        return (0.0, 0)

    def orders(self, names: Sequence[str]) -> dict[str, tuple[float, int]]:
        """:meth:`order` in each named input, e.g. ``{"p": (1.0, 0), "n": (3.0, 0)}``."""
        return {nm: self.order(k) for k, nm in enumerate(names)}

    # ----------------------------------------------------------------- evaluation
    def evaluate(self, X: np.ndarray) -> np.ndarray:
        """Value of the term on each row of ``X`` (n x p), float array of length n."""
        X = np.asarray(X, dtype=float)
        n = X.shape[0]
        with np.errstate(all="ignore"):
            if self.kind == "identity":
                return np.ones(n)
            if self.kind == "pmnf":
                out = np.ones(n)
                for k, e, lp in self.factors:
                    a = np.abs(X[:, k])
                    out = out * a ** e
                    if lp:
                        out = out * np.log2(a) ** lp
                return out
            x = X[:, self.i]
            if self.kind == "power":
                return np.where(x != 0.0, np.abs(x) ** float(self.exponent), 1.0)
            if self.kind == "log":
                return np.where(x != 0.0, np.log2(np.abs(x)), 1.0)
            if self.kind == "sqrt":
                return np.sqrt(np.abs(x))
            if self.kind == "product":
                return x * X[:, self.j]
            if self.kind == "quotient":
                return x / X[:, self.j]
            if self.kind == "epm":
                a = np.abs(x)
                out = a ** float(self.exponent)
                if self.logpow:
                    out = out * np.log2(a) ** self.logpow
                return out
        raise ValueError(f"unknown term kind {self.kind!r}")

    # ----------------------------------------------------------------- names
    def name(self, names: Sequence[str] | None = None) -> str:
        """Readable name, e.g. ``|n|^2``, ``log2|n|``, ``n*m``, ``|n|^(3/2)*log2|n|^2``."""
        def nm(k: int) -> str:
            return names[k] if names is not None else f"x[{k}]"

        if self.kind == "identity":
            return "1"
        if self.kind == "power":
            return f"|{nm(self.i)}|^{_fmt_number(self.exponent)}"
        if self.kind == "log":
            return f"log2|{nm(self.i)}|"
        if self.kind == "sqrt":
            return f"sqrt|{nm(self.i)}|"
        if self.kind == "product":
            return f"{nm(self.i)}*{nm(self.j)}"
        if self.kind == "quotient":
            return f"{nm(self.i)}/{nm(self.j)}"
        if self.kind in ("epm", "pmnf"):
            fs = self.factors if self.kind == "pmnf" else ((self.i, self.exponent, self.logpow),)
            parts = []
            for k, e, lp in fs:
                frac = Fraction(e).limit_denominator(12)
                if frac != 0:
                    parts.append(f"|{nm(k)}|^{frac.numerator}" if frac.denominator == 1 else f"|{nm(k)}|^({frac})")
                if lp:
                    parts.append(f"log2|{nm(k)}|" + (f"^{lp}" if lp != 1 else ""))
            return "*".join(parts) if parts else "1"
        raise ValueError(f"unknown term kind {self.kind!r}")

    # ----------------------------------------------------------------- Eiger encodings
    @property
    def eiger_encodable(self) -> bool:
        """Whether Eiger's model files can hold this term."""
        return self.kind in _KIND_CODE

    def encode(self) -> str:
        """Eiger's text encoding (``0``, ``1 i n``, ``2 i j``, ``3 i``, ``4 i``, ``5 i j``)."""
        if not self.eiger_encodable:
            raise ValueError(f"term {self.name()} ({self.kind}) has no Eiger encoding")
        code = _KIND_CODE[self.kind]
        if self.kind == "identity":
            return "0"
        if self.kind == "power":
            return f"1 {self.i} {_fmt_number(self.exponent)}"
        if self.kind in ("product", "quotient"):
            return f"{code} {self.i} {self.j}"
        return f"{code} {self.i}"

    @classmethod
    def decode(cls, text: str) -> Term:
        """Inverse of :meth:`encode`; raises ``ValueError`` on a malformed encoding."""
        fields = text.split()
        if not fields:
            raise ValueError("empty function encoding")
        try:
            code = int(fields[0])
            kind = _CODE_KIND[code]
        except (ValueError, KeyError):
            raise ValueError(f"unknown function code {fields[0]!r} (expected 0-5)") from None
        want = {"identity": 1, "power": 3, "product": 3, "sqrt": 2, "log": 2, "quotient": 3}[kind]
        # Eiger's documentation lists "5 i" (1/x_i); its code writes "5 i j"; accept both.
        if kind == "quotient" and len(fields) == 2:
            return cls("power", int(fields[1]), exponent=-1.0)
        if len(fields) != want:
            raise ValueError(f"function {kind!r} (code {code}) takes {want - 1} arguments, got {len(fields) - 1}")
        try:
            if kind == "identity":
                return cls("identity")
            if kind == "power":
                return cls("power", int(fields[1]), exponent=float(fields[2]))
            if kind in ("product", "quotient"):
                return cls(kind, int(fields[1]), int(fields[2]))
            return cls(kind, int(fields[1]))
        except ValueError:
            raise ValueError(f"bad argument in function encoding {text!r}") from None

    def to_json(self) -> dict[str, Any]:
        """Eiger's JSON form of the regressor (without the ``weight`` key)."""
        if self.kind == "identity":
            return {"function": "identity"}
        if self.kind == "power":
            e = float(self.exponent)
            return {"function": "power", "index": self.i, "exponent": int(e) if e.is_integer() else e}
        if self.kind == "product":
            return {"function": "product", "first_idx": self.i, "second_idx": self.j}
        if self.kind == "quotient":
            return {"function": "quotient", "first_idx": self.i, "second_idx": self.j}
        if self.kind in ("sqrt", "log"):
            return {"function": self.kind, "index": self.i}
        raise ValueError(f"term {self.name()} ({self.kind}) has no Eiger encoding")

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Term:
        """Inverse of :meth:`to_json`; indices may be ints or strings (Eiger writes both)."""
        func = obj.get("function")
        try:
            if func == "identity":
                return cls("identity")
            if func == "power":
                return cls("power", int(obj["index"]), exponent=float(obj["exponent"]))
            if func in ("product", "quotient"):
                return cls(func, int(obj["first_idx"]), int(obj["second_idx"]))
            if func in ("sqrt", "log"):
                return cls(func, int(obj["index"]))
        except KeyError as exc:
            raise ValueError(f"regressor {func!r} lacks key {exc.args[0]!r}") from None
        raise ValueError(f"unknown regressor function {func!r}")

    @property
    def max_index(self) -> int:
        """Largest input column the term reads (-1 for the identity)."""
        if self.kind == "pmnf":
            return max(k for k, _, _ in self.factors)
        return max(self.i, self.j)


def eiger_pool(n_inputs: int, functions: Sequence[str] = EIGER_FUNCTIONS) -> list[Term]:
    """Eiger's regressor pool over ``n_inputs`` columns, in Eiger's order.

    Parameters
    ----------
    n_inputs : int
        Number of input columns (rotated components in Eiger mode, raw parameters in perfmod mode).
    functions : sequence of str
        Families to include (see :data:`EIGER_FUNCTIONS`).
    """
    unknown = set(functions) - set(EIGER_FUNCTIONS)
    if unknown:
        raise ValueError(f"unknown regressor families {sorted(unknown)}; known: {list(EIGER_FUNCTIONS)}")
    pool = [Term("identity")]
    for col in range(n_inputs):
        for fam in ("inv_quadratic", "inv_linear", "inv_sqrt", "sqrt", "linear", "quadratic"):
            if fam in functions:
                pool.append(Term("power", col, exponent=float(_POWER_OF[fam])))
        if "log" in functions:
            pool.append(Term("log", col))
        if "cross" in functions:
            pool.extend(Term("product", col, x) for x in range(col, n_inputs))
        if "div" in functions:
            for x in range(col + 1, n_inputs):  # Eiger also lists x_i/x_i (twice), a copy of the identity
                pool.append(Term("quotient", col, x))
                pool.append(Term("quotient", x, col))
    return pool


def normal_form_pool(n_inputs: int, exponents: Sequence[Fraction | float] = EPM_EXPONENTS,
                     log_powers: Sequence[int] = (0, 1, 2)) -> list[Term]:
    """Extra-P normal-form terms ``|x_i|^(a/b) * log2(|x_i|)^k`` for each input (constant excluded)."""
    out = []
    for col in range(n_inputs):
        for e in exponents:
            for k in log_powers:
                if float(e) == 0.0 and k == 0:
                    continue
                out.append(Term("epm", col, exponent=float(e), logpow=int(k)))
    return out


def evaluate_terms(terms: Sequence[Term], X: np.ndarray) -> np.ndarray:
    """Design matrix (n x len(terms)) of ``terms`` on the rows of ``X``."""
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    if not terms:
        return np.empty((X.shape[0], 0))
    return np.column_stack([t.evaluate(X) for t in terms])


def _unique(terms: Sequence[Term]) -> list[Term]:
    """Drop repeated terms keeping the first occurrence (Eiger's pool lists x_i/x_i twice)."""
    seen: set[Term] = set()
    out = []
    for t in terms:
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out
