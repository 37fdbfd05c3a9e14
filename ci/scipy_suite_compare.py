"""Compare SciPy's array-API tests on xad and on array_api_strict (ci/scipy_suite.sh).

Reads the junit XML of one pytest run over both backends, pairs each ``[...xad...]`` test
with its ``[...array_api_strict...]`` twin, prints per-backend counts and every test that
passes on array_api_strict and fails on xad, and exits 1 when there is any outside
``JUSTIFIED``.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter

XAD, STRICT = "xad", "array_api_strict"

# Tests that pass on array_api_strict and fail on xad by a decision, each with its reason.
# Mixed int64/float32 arguments: xad promotes as PyTorch and JAX do (float32; issue 26's
# result_type rule), SciPy's reference is NumPy's float64. SciPy marks the same two tests
# xfail on its own torch backend ("dtypes do not match").
# (test names without their module: the junit class name varies with how pytest was run)
JUSTIFIED = {
    "test_support_alternative_backends_mismatched_dtypes[<xp>-rel_entr]",  # scipy.special
    "test_support_alternative_backends_mismatched_dtypes[<xp>-xlogy]",
}


def _outcome(case: ET.Element) -> str:
    for tag in ("failure", "error", "skipped"):
        if case.find(tag) is not None:
            return "failed" if tag == "error" else tag.replace("ure", "ed")
    return "passed"


def _split(name: str) -> tuple[str, str] | None:
    """(backend, key) for a test id with a backend among its parameters, else None."""
    m = re.fullmatch(r"(.*)\[(.*)\]", name)
    if not m:
        return None
    tokens = m.group(2).split("-")
    for backend in (XAD, STRICT):
        if backend in tokens:
            tokens[tokens.index(backend)] = "<xp>"
            return backend, f"{m.group(1)}[{'-'.join(tokens)}]"
    return None


def _name(key: str) -> str:
    return key.rpartition("::")[2]


def main(path: str) -> int:
    results: dict[str, dict[str, str]] = {XAD: {}, STRICT: {}}
    for case in ET.parse(path).iter("testcase"):
        split = _split(case.get("name", ""))
        if split:
            backend, key = split
            results[backend][f"{case.get('classname')}::{key}"] = _outcome(case)
    for backend, res in results.items():
        counts = Counter(res.values())
        tally = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        print(f"{backend}: {len(res)} tests, {tally}")
    only_strict = [k for k, o in results[STRICT].items() if o == "passed"]
    bad = sorted(k for k in only_strict if results[XAD].get(k) == "failed")
    skipped = sum(1 for k in only_strict if results[XAD].get(k) == "skipped")
    for key in bad:
        why = "  (justified: see JUSTIFIED)" if _name(key) in JUSTIFIED else ""
        print(f"XAD-ONLY FAILURE {key}{why}")
    unexplained = [k for k in bad if _name(k) not in JUSTIFIED]
    print(f"scipy-suite: {len(bad)} tests pass on array_api_strict and fail on xad, "
          f"{len(bad) - len(unexplained)} of them justified ({skipped} more are skipped on "
          f"xad only)")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
