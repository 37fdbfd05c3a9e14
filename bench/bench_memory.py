"""Peak resident memory of ``mlp`` training steps, each implementation in a fresh process.

The child imports what its implementation needs and runs two steps of a tiny model (so that
lazily loaded code and the BLAS's work buffers land in the baseline, not in the figure). It
then resets the kernel's peak-RSS mark (``/proc/self/clear_refs``; where that is not
allowed, the figure is the growth of ``ru_maxrss``), records the resident set as baseline,
builds the model and data, runs the steps, and reports peak minus baseline: what the
workload added.
"""

from __future__ import annotations

import gc
import json
import os
import re
import resource
import subprocess
import sys
from typing import Any

__all__ = ["child_main", "measure"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            m = re.search(rf"^{field}:\s+(\d+) kB", f.read(), re.M)
        return int(m.group(1)) if m else None
    except OSError:
        return None


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def child_main(impl: str, size: str, steps: int, threads: int) -> None:
    """Run in the child process: print one JSON line with baseline and peak RSS in KiB.

    ``threads``: for NumPy's BLAS (through threadpoolctl, if installed) and torch.
    """
    import numpy  # noqa: F401
    try:
        from threadpoolctl import threadpool_limits
        limit = threadpool_limits(limits=threads, user_api="blas")  # noqa: F841 (kept alive)
    except ImportError:
        pass
    if impl == "xad":
        import xad
        import xad.nn  # noqa: F401
        import xad.optim  # noqa: F401
        xad.set_backend("numpy")
    elif impl == "torch":
        import torch
        import torch.nn  # noqa: F401
        import torch.optim  # noqa: F401
        torch.set_num_threads(threads)
    from bench_mlp import build_mlp
    warm = build_mlp("mlp")(impl, "tiny")  # loads what the first step loads lazily: torch's
    for _ in range(2):                     # dynamo (at Adam()), BLAS work buffers, ...
        warm.step()
    del warm
    gc.collect()
    reset = _reset_peak()
    base = _status_kib("VmRSS") if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    runner = build_mlp("mlp")(impl, size)
    for _ in range(steps):
        runner.step()
    peak = _status_kib("VmHWM") if reset else None
    if peak is None:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"impl": impl, "base_kib": base, "peak_kib": peak, "reset": reset,
                      "threads": threads}))


def measure(impl: str, size: str, steps: int, threads: int) -> dict[str, Any]:
    """Run one child for ``impl``; returns its JSON with ``mib`` (peak growth in MiB) added."""
    cmd = [sys.executable, os.path.join(_HERE, "run.py"), "--mem-child", impl, "--size", size,
           "--steps", str(steps), "--threads", str(threads)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"memory child for {impl} failed ({proc.returncode}):\n"
                           f"{proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["mib"] = (out["peak_kib"] - out["base_kib"]) / 1024
    return out
