"""What the GPU scripts (ci/graph_step_gpu.py, ci/nccl_gpu.py) share: one printed line per
check, and the count of failed ones for the exit status."""

from __future__ import annotations

failures = 0


def check(name: str, ok: bool, detail: str = "") -> None:
    """Print ``ok``/``FAIL``, ``name`` and ``detail``; count a failure."""
    global failures
    failures += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {name} {detail}", flush=True)


def status() -> int:
    """The exit status: 1 after any failed check, else 0 (the count printed first)."""
    print(f"{failures} failure(s)", flush=True)
    return 1 if failures else 0
