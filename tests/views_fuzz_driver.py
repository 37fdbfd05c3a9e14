"""The driver the two view and in-place fuzzers against PyTorch share
(tests/test_views_fuzz_torch.py and tests/test_views_fuzz_more.py): run each step in both
libraries, compare which raised, end on a documented difference, then compare every value
and backward through a loss over all tensors. Each fuzzer brings its state, its steps and
what it compares after backward."""

from __future__ import annotations

import os
import random
from collections.abc import Callable

import numpy as np

STEPS = 10

# Where one library raises and the other runs, by design (docs/PORTING.md, "Views and
# storage"): (what xad's error says or None, what torch's says or None) -> the reason.
KNOWN = {
    ("PyTorch fails at backward there", None):
        "a change of elements that share memory, in a graph: PyTorch fails at backward, "
        "xad refuses at once",
    ("expanded view", None): "an integer or bool index written into an expanded view: "
                             "PyTorch writes (and warns that this is deprecated), xad raises",
    (None, "leaf Variable that requires grad"): "an in-place change of a view taken from a "
                                                "plain tensor before it joined a graph: "
                                                "PyTorch raises, xad records it",
}


def known(raised: list) -> str | None:
    """The reason for a documented difference in which library raised, or None."""
    for (x, t), why in KNOWN.items():
        if all((e is None) if m is None else (e is not None and m in str(e))
               for e, m in zip(raised, (x, t))):
            return why
    return None


def both(step: Callable) -> tuple[list, list]:
    """Run ``step(lib_index, lib)`` for xad then torch: (what each raised, their results)."""
    out, raised = [None, None], [None, None]
    for i, lib in enumerate(("xad", "torch")):
        try:
            out[i] = step(i, lib)
        except Exception as e:  # noqa: BLE001 -- which steps raise is what is compared
            raised[i] = e
    return raised, out


def close(a, b, rtol: float = 1e-9) -> bool:
    """Whether two arrays have one shape and the same values (NaN equal to NaN)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=rtol / 100,
                                              equal_nan=True)


def values_then_backward(ts: list, rtol: float) -> tuple[str | None, list]:
    """Compare the values of every tensor pair in ``ts``, then run backward in both
    libraries through one loss over all of them: (the first difference or None, what each
    library's backward raised)."""
    for j, (tx, tt) in enumerate(ts):
        if not close(tx.detach().numpy(), tt.detach().numpy(), rtol):
            return f"values of t{j} differ: xad {tx.detach().numpy()} torch {tt.detach()}", []

    def loss(i, lib):
        total = 0.0
        for j, t in enumerate(p[i] for p in ts):
            if t.requires_grad:
                total = total + (t * (0.3 + 0.1 * j)).sum()
        if not isinstance(total, float):
            total.backward()
    raised, _ = both(loss)
    if (raised[0] is None) != (raised[1] is None) and not known(raised):
        return f"backward: xad raised {raised[0]!r}, torch raised {raised[1]!r}", raised
    return None, raised


def run_program(seed: int, shapes: tuple, state: Callable, step: Callable,
                finish: Callable) -> tuple[str | None, list[str]]:
    """One random program: (the first difference or None, the steps run); a documented
    difference in which library raises ends the program without one."""
    rng = random.Random(seed)
    st = state(rng, rng.choice(shapes))
    steps: list[str] = []
    for _ in range(STEPS):
        what, raised = step(rng, st)
        steps.append(what)
        if (raised[0] is None) != (raised[1] is None):
            if known(raised):
                return None, steps
            return f"{what}: xad raised {raised[0]!r}, torch raised {raised[1]!r}", steps
        if raised[0] is not None:
            break  # both raised: the states may differ from here on
    return finish(st), steps


def check_programs(backend: str, program: Callable, n: int, seed: int) -> None:
    """Run ``n`` seeded programs (3 on JAX, which compiles each operation, unless
    ``XAD_FUZZ_N`` asks) and fail listing the first five differences."""
    n = n if backend != "jax" or "XAD_FUZZ_N" in os.environ else 3
    failures = []
    for k in range(n):
        diff, steps = program(seed * 1_000_003 + k)
        if diff:
            failures.append(f"seed {seed * 1_000_003 + k}: {diff}\n  steps: {steps}")
    assert not failures, "\n".join(failures[:5]) + f"\n({len(failures)} of {n})"
