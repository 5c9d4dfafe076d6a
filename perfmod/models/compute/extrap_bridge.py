"""Extra-P's default modeler in a process of its own: the bridge's far side (run by path, not imported).

Extra-P 4.2 (PyPI ``extrap``) pins NumPy 1.x and pulls in Qt, so it cannot share an environment with
perfmod's NumPy 2.  :mod:`perfmod.models.compute.extrap_runner` starts this file with the Python of an
environment that has ``extrap`` (``make extrap-env`` builds one) and talks to it in JSON lines: this
file imports only the standard library, NumPy and Extra-P, never perfmod, and reads data only.

Protocol.  It first writes ``{"extrap": "<version>"}``.  Then, for each request line
``{"path": "<Extra-P text experiment>", "names": [...], "query": [[x, ...], ...]}`` (``names``: the
parameters in the order of ``query``'s columns), it fits the experiment's first callpath and metric
with Extra-P's default modeler and answers one line ``{"predicted": [...], "lead": [[exponent,
log-exponent], ...] (per name), "function": "<Extra-P's text of the model>", "seconds": fit time}``,
or ``{"error": "<what went wrong>"}``.  An empty line or the end of input ends it.
"""

import json
import os
import sys
import time
import warnings


def _lead(func, order, names):
    """The largest (polynomial exponent, log exponent) of each parameter over the model's terms."""
    lead = [(0.0, 0)] * len(names)
    for ct in func.compound_terms:
        pairs = ct.parameter_term_pairs if hasattr(ct, "parameter_term_pairs") else [(0, ct)]
        for pidx, cterm in pairs:
            e = sum(float(s.exponent) for s in cterm.simple_terms if s.term_type == "polynomial")
            k = int(sum(float(s.exponent) for s in cterm.simple_terms if s.term_type == "logarithm"))
            q = names.index(order[pidx])
            lead[q] = max(lead[q], (e, k))
    return [list(x) for x in lead]


def _fit(req):
    import numpy as np
    from extrap.fileio.file_reader.text_file_reader import TextFileReader
    from extrap.modelers.model_generator import ModelGenerator

    names = [str(x) for x in req["names"]]
    query = np.asarray(req["query"], dtype=float).reshape(-1, len(names))
    t0 = time.perf_counter()
    exp = TextFileReader().read_experiment(str(req["path"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ModelGenerator(exp).model_all()
    model = next(iter(exp.modelers[0].models.values()))
    func = model.hypothesis.function
    seconds = time.perf_counter() - t0
    order = [p.name for p in exp.parameters]
    if sorted(order) != sorted(names):
        raise ValueError(f"the experiment's parameters {order} are not the request's {names}")
    cols = query[:, [names.index(nm) for nm in order]]
    pred = func.evaluate(cols.T if len(names) > 1 else cols[:, 0])
    pred = np.broadcast_to(np.asarray(pred, dtype=float), (len(query),))
    return {"predicted": [float(v) for v in pred], "lead": _lead(func, order, names),
            "function": func.to_string(*exp.parameters), "seconds": seconds}


def main():
    from importlib.metadata import version

    # the replies get a descriptor of their own; whatever else writes to the standard output (Extra-P, or a
    # library's C code) goes to the standard error instead, so it cannot break a reply
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    out.write(json.dumps({"extrap": version("extrap")}) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            break
        try:
            reply = _fit(json.loads(line))
        except Exception as exc:  # the caller records the failure for this case and goes on
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
