"""xad.distributed across processes: ``mpiexec -n 2`` and ``-n 3`` (oversubscribed on a
2-core machine; MPICH needs no flag for it) run tests/distributed_worker.py, each launch
grouping many checks (see its docstring). A timeout in the harness proves no rank hangs:
each job that ends early did hang before (``exit``, ``uneven``, ``timeout``)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mpi4py", reason="the mpi extra is not installed: pip install 'xad[mpi]'")

MPIEXEC = Path(sys.executable).parent / "mpiexec"  # the mpich wheel's launcher, in the venv
WORKER = Path(__file__).with_name("distributed_worker.py")
ROOT = Path(__file__).resolve().parent.parent


def launch(n: int, mode: str, timeout: float = 240) -> subprocess.CompletedProcess:
    assert MPIEXEC.exists(), f"no mpiexec beside {sys.executable}: pip install 'xad[mpi]'"
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return subprocess.run([str(MPIEXEC), "-n", str(n), sys.executable, str(WORKER), mode],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


@pytest.mark.parametrize("mode", ["mpi", "nccl"])
@pytest.mark.parametrize("n", [2, 3])
def test_collectives_and_data_parallel_across_processes(n, mode):
    r = launch(n, mode)
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in range(n):
        assert f"rank {rank}/{n} {mode}: ALL OK" in r.stdout, r.stdout + r.stderr


def test_a_failing_rank_aborts_every_rank_and_is_named():
    r = launch(3, "fail")  # ranks 0 and 2 wait in a barrier for rank 1, which raises
    assert r.returncode != 0
    assert "rank 1 of 3 failed with ValueError: boom on purpose" in r.stderr, r.stderr


LEAVING = {  # words both ranks' messages hold (one rank's abort may cut the other's short)
    "exit": ["the ranks disagree: rank 0: barrier; rank 1: leaving (its program ended or it "
             "called sys.exit)", "a rank left while others still wait"],
    "uneven": ["rank 1 finished its batches", "the ranks disagree: rank 0: DataParallel "
               "backward of", "rank 1: leaving", "the same number of batches"],
    "timeout": ["xad.distributed: rank 0 of 2: barrier: not every rank joined within 1 s "
                "(init(timeout=...))"],
}


@pytest.mark.parametrize("mode", LEAVING)
def test_a_rank_that_leaves_or_stalls_ends_the_job_with_an_error(mode):
    r = launch(2, mode, timeout=60)  # each hung forever before
    assert r.returncode != 0
    out = r.stdout + r.stderr
    for words in LEAVING[mode]:
        assert words in out, out
