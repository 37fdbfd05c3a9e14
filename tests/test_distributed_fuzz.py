"""Differential fuzzing of DataParallel (tests/distributed_fuzz_cases.py says what a case
draws): trained under DataParallel, each case's parameters equal one process's on every
rank's shard. One process on every backend, and ``mpiexec -n 2``/``-n 3`` on NumPy.
``XAD_FUZZ_N`` sets the cases per run (default: in one process 3 on NumPy, 1 elsewhere; 4
per launch; the long run: ``XAD_FUZZ_N=500``); ``XAD_FUZZ_SEED`` the first seed."""

import os

import distributed_fuzz_cases as cases
import numpy as np
import pytest
from distributed_fuzz_cases import draw, run
from test_distributed_mpi import launch

import xad

pytest.importorskip("mpi4py", reason="the mpi extra is not installed: pip install 'xad[mpi]'")
dist = xad.distributed
N = int(os.environ.get("XAD_FUZZ_N", "0"))
SEED = int(os.environ.get("XAD_FUZZ_SEED", "0"))


def same(mine, ref, seed):
    for k, (a, b) in enumerate(zip(mine, ref)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=cases.ATOL,
                                   err_msg=f"case {seed}: {draw(seed, 1)}, parameter {k}")


def test_one_rank_trains_as_one_process(xb):
    dist.init("mpi")
    for seed in range(SEED, SEED + (N or (3 if xb.name == "numpy" else 1))):
        same(*run(draw(seed, 1), dist, 0, 1), seed)


@pytest.mark.parametrize("n", [2, 3])
def test_ranks_train_as_one_process(n):
    r = launch(n, f"fuzz:{SEED}:{N or 4}", timeout=240 + 2 * N)
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in range(n):
        assert f"rank {rank}/{n} fuzz: {N or 4} cases OK" in r.stdout, r.stdout + r.stderr
