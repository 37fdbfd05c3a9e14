"""Kernel budgets of a training step on ``cupy-sim`` (bench/bench_kernels.py counts them).

At GPU sizes a step is bound by kernel launches, and the emulator's counts are exact, so a
test can hold them: kernels launched one by one per step (eager, and compiled with CUDA
graphs: kernels outside the graphs), graph launches, and no host transfer and no new
pool block once the step is warm. A budget is today's count; lower it when a change lowers
the count (bench/README.md keeps the table, before and after).
"""

from __future__ import annotations

import os
import sys

import pytest

sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "bench"))
from bench_kernels import measure  # noqa: E402

# workload: (eager kernels, compiled kernels outside graphs, compiled graph launches)
BUDGETS = {
    "mlp": (59, 23, 9),
    "attention": (440, 205, 56),
    "digits": (79, 38, 10),
    "cnn_digits": (208, 42, 11),
    "fit_nonlinear": (95, 71, 29),
    "transformer": (350, 92, 43),
}


@pytest.mark.parametrize("device", [0, 1])
@pytest.mark.parametrize("name", list(BUDGETS))
def test_eager_step_within_its_kernel_budget(name, device):
    c = measure(name, device=device)
    assert c.kernels <= BUDGETS[name][0], f"{name}: {c}"
    assert c.graphs == 0 and c.transfers == 0 and c.blocks == 0, f"{name}: {c}"


def test_the_mlp_adam_step_budget_is_at_most_60_kernels():
    """bench_gpu.py's MLP (784-1024-1024-10, batch 512): PyTorch's CUDA step is ~45
    kernels; xad's was 852, the optimiser run over cache-sized chunks of each parameter
    (the eager test above holds the count to the budget)."""
    assert BUDGETS["mlp"][0] <= 60


@pytest.mark.parametrize("name", list(BUDGETS))
def test_compiled_step_within_its_budget(name):
    c = measure(name, compiled=True)
    kernels, graphs = BUDGETS[name][1:]
    assert c.kernels <= kernels and c.graphs <= graphs, f"{name}: {c}"
    assert c.transfers == 0, f"{name}: {c}"
