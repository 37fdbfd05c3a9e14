"""The names PyTorch scripts touch in their first lines, under xad.as_torch: torch.backends,
torch.__version__/torch.version, torch.Size, torch.cuda's device functions, jit, profiler,
distributed, the private base classes and nn.init's deprecated aliases (PyTorch 2.13's
meanings; each raised AttributeError before)."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from test_as_torch import _run

import xad
from xad import as_torch
from xad.torch_backends_flags import TorchVersion
from xad.torch_functions import cuda_usable, set_float32_matmul_precision
from xad.torch_size import TorchSize

ROOT = Path(__file__).resolve().parents[1]
HEADER = ROOT / "tests" / "torch_programs" / "script_header.py"


@pytest.fixture
def t():
    return as_torch.namespace()["torch"]


@pytest.mark.parametrize("backend", ["numpy", "array_api_strict"])
def test_script_header_runs_under_as_torch_as_under_pytorch(backend):
    pytest.importorskip("torch")
    want = _run(str(HEADER))
    got = _run("-m", "xad.as_torch", "--backend", backend, str(HEADER))
    assert got == want


def test_size_is_a_tuple_subclass_as_torch_size(t, xb):
    x = t.zeros(2, 3)
    s = x.size()
    assert isinstance(s, t.Size) and isinstance(s, tuple) and s == (2, 3)
    assert x.shape == t.Size([2, 3]) and s == t.Size([2, 3])
    assert repr(s) == "torch.Size([2, 3])" and repr(t.Size()) == "torch.Size([])"
    assert s.numel() == 6 and t.Size([]).numel() == 1
    assert repr(s[1:]) == "torch.Size([3])" and type(s[0]) is int
    assert repr(s + (4,)) == "torch.Size([2, 3, 4])" == repr((2,) + t.Size([3, 4]))
    assert repr(s * 2) == "torch.Size([2, 3, 2, 3])" and hash(s) == hash((2, 3))
    assert x.size(1) == 3 and x.size == 6  # the Array API's attribute is unchanged


def test_size_rejects_non_integers_as_torch():
    with pytest.raises(TypeError, match=r"takes an iterable of 'int' \(item 0 is 'float'\)"):
        TorchSize([2.0])


def test_version_compares_with_strings_and_tuples(t):
    v = t.__version__
    assert isinstance(v, str) and isinstance(v, TorchVersion) and v.startswith("2.13.0+xad")
    assert v >= "2.0" and v >= (2, 0) and v > "1.13.1" and v < "2.14" and v < (3,)
    assert v == "2.13" and v == (2, 13, 0) and v != "2.12" and not v > "2.13.0"
    assert t.version.__version__ == v and t.version.hip is None and t.version.debug is False
    with pytest.raises(ValueError, match="not a version"):
        _ = v < "nightly"


def test_cudnn_flags_are_recorded_with_torch_defaults(t):
    cudnn = t.backends.cudnn
    assert (cudnn.benchmark, cudnn.deterministic, cudnn.enabled, cudnn.allow_tf32) == (
        False, False, True, True)
    cudnn.benchmark, cudnn.deterministic = True, True
    assert cudnn.benchmark and cudnn.deterministic
    assert as_torch.namespace()["torch"].backends.cudnn.benchmark is False  # a fresh namespace
    assert cudnn.is_available() is False and cudnn.version() is None
    assert t.backends.mps.is_available() is False and t.backends.mps.is_built() is False
    assert t.backends.cuda.is_built() is cuda_usable()


def test_matmul_allow_tf32_is_the_float32_matmul_precision(t):
    m = t.backends.cuda.matmul
    try:
        assert m.allow_tf32 is False  # "highest", PyTorch's default
        m.allow_tf32 = True
        assert t.get_float32_matmul_precision() == "high"
        t.set_float32_matmul_precision("highest")
        assert m.allow_tf32 is False
        t.set_float32_matmul_precision("medium")
        assert m.allow_tf32 is True
    finally:
        set_float32_matmul_precision("highest")


def test_torch_cuda_on_the_backend(t, xb):
    """CuPy's pool, device and events on cupy-sim; a CPU-only PyTorch's answers elsewhere."""
    if not cuda_usable():
        assert t.cuda.memory_allocated() == 0 == t.cuda.max_memory_allocated()
        assert t.cuda.memory_reserved() == 0 and t.version.cuda is None
        t.cuda.manual_seed(1)
        t.cuda.manual_seed_all(1)
        t.cuda.empty_cache()
        for f in (t.cuda.synchronize, t.cuda.get_device_name, t.cuda.current_device,
                  t.cuda.reset_peak_memory_stats, lambda: t.cuda.set_device(0)):
            with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
                f()
        with pytest.raises(RuntimeError, match="dummy base class Event"):
            t.cuda.Event(enable_timing=True)
        with pytest.raises(RuntimeError, match="torch.cuda.Stream requires CUDA support"):
            t.cuda.Stream()
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
            t.cuda.current_stream()
        with t.cuda.stream(None):
            pass
        t.cuda.set_device(-1)  # nothing, as in PyTorch
        assert t.get_default_device() == "cpu"
        return
    before = t.cuda.memory_allocated()
    x = t.ones(1000)
    assert t.cuda.memory_allocated() >= before + 4000
    assert t.cuda.memory_reserved() >= t.cuda.memory_allocated()
    del x
    t.cuda.empty_cache()
    dev = int(xb.device.id)
    assert t.cuda.current_device() == dev and t.get_default_device() == f"cuda:{dev}"
    runtime = xb.cupy.cuda.runtime  # (the emulator's answers on cupy-sim, CUDA's on a GPU)
    props = runtime.getDeviceProperties(dev)
    assert t.cuda.get_device_name() == props["name"].decode()
    assert t.cuda.get_device_properties(dev).total_memory == props["totalGlobalMem"]
    v = runtime.runtimeGetVersion()
    assert t.version.cuda == f"{v // 1000}.{v % 1000 // 10}"
    start, end = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
    start.record()
    (t.ones(3) * 2).sum()
    end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0.0
    side = t.cuda.Stream()
    side.wait_stream(t.cuda.current_stream())
    with t.cuda.stream(side):
        y = t.ones(3) * 2
        assert t.cuda.current_stream()._stream is side._stream
    t.cuda.current_stream().wait_stream(side)
    side.record_event().wait()
    side.synchronize()
    assert side.query() and y.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(NotImplementedError, match="keeps no peak"):
        t.cuda.max_memory_allocated()
    t.cuda.synchronize()
    if runtime.getDeviceCount() > 1:  # (the emulator's two; a one-GPU machine has one)
        with t.cuda.device(1 - dev):
            assert t.cuda.current_device() == 1 - dev
    assert xad.get_backend() is xb


def test_seeding_cuda_on_a_gpu_backend_seeds_its_draws(t, xb):
    t.cuda.manual_seed(3)
    a = t.rand(4).tolist()
    t.cuda.manual_seed_all(3)
    b = t.rand(4).tolist()
    assert (a == b) is cuda_usable()  # a host backend's generator is not CUDA's


def test_custom_loss_subclasses_take_torchs_arguments(t, xb):
    _Loss, _WeightedLoss = t.nn.modules.loss._Loss, t.nn.modules.loss._WeightedLoss
    with pytest.warns(UserWarning, match="reduction='sum'"):
        assert _Loss(size_average=False).reduction == "sum"
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert _Loss(None, False).reduction == "none"
    w = _WeightedLoss(t.ones(2), reduction="sum")
    assert w.reduction == "sum" and list(dict(w.named_buffers())) == ["weight"]

    class Scaled(_Loss):
        def forward(self, a, b):
            return 3 * t.nn.functional.mse_loss(a, b, reduction=self.reduction)
    a, b = t.tensor([1.0, 2.0], requires_grad=True), t.tensor([0.0, 4.0])
    Scaled(reduction="sum")(a, b).backward()
    assert a.grad.tolist() == [6.0, -12.0]


def test_xads_layers_count_as_instances_of_torchs_private_bases(t):
    """As PyTorch's class tree: MSELoss is a _Loss, NLLLoss a _WeightedLoss, BatchNorm2d a
    _BatchNorm, InstanceNorm1d a _NormBase; a user's subclass does not widen."""
    loss, bn = t.nn.modules.loss, t.nn.modules.batchnorm
    assert isinstance(t.nn.MSELoss(), loss._Loss) and not isinstance(t.nn.MSELoss(),
                                                                       loss._WeightedLoss)
    assert isinstance(t.nn.CrossEntropyLoss(), loss._WeightedLoss)
    assert issubclass(t.nn.NLLLoss, loss._WeightedLoss) and issubclass(t.nn.L1Loss, loss._Loss)
    assert isinstance(t.nn.BatchNorm2d(3), bn._BatchNorm)
    assert isinstance(t.nn.InstanceNorm1d(3), bn._NormBase)
    assert not isinstance(t.nn.InstanceNorm1d(3), bn._BatchNorm)
    assert not isinstance(t.nn.Linear(2, 2), bn._NormBase)
    assert issubclass(t.nn.Conv2d, t.nn.modules.conv._ConvNd)

    class Mine(loss._Loss):
        pass
    assert not isinstance(t.nn.MSELoss(), Mine) and isinstance(Mine(), loss._Loss)


def test_batchnorm_subclass_checks_its_input_with_check_input_dim(t, xb):
    class Norm4d(t.nn.modules.batchnorm._BatchNorm):
        def _check_input_dim(self, x):
            if x.dim() != 4:
                raise ValueError(f"expected 4D input (got {x.dim()}D input)")
    m = Norm4d(3)
    x = t.randn(2, 3, 2, 2, dtype=t.float64)
    want = (x - x.mean(dim=(0, 2, 3), keepdim=True)) / (x.var(dim=(0, 2, 3), unbiased=False,
                                                             keepdim=True) + 1e-5).sqrt()
    assert (m.double()(x) - want).abs().max().item() < 1e-10
    with pytest.raises(ValueError, match="expected 4D input"):
        m(t.randn(2, 3))
    with pytest.raises(NotImplementedError, match="_check_input_dim"):
        t.nn.modules.batchnorm._BatchNorm(3)(t.randn(2, 3))


def _warmup_lrs(torch_module) -> list[float]:
    class Warmup(torch_module.optim.lr_scheduler._LRScheduler):
        def __init__(self, optimizer, steps):
            self.steps = steps
            super().__init__(optimizer)

        def get_lr(self):
            return [b * min(1.0, (self.last_epoch + 1) / self.steps) for b in self.base_lrs]
    p = torch_module.zeros(1, requires_grad=True)
    opt = torch_module.optim.SGD([p], lr=0.5)
    sched, lrs = Warmup(opt, 4), []
    for _ in range(6):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return lrs


def test_lr_scheduler_subclass_as_torch(t):
    torch = pytest.importorskip("torch")
    assert _warmup_lrs(t) == _warmup_lrs(torch)


def test_deprecated_init_aliases_warn_as_torch(t, xb):
    w = t.empty(2, 3)
    for name in ("uniform", "normal", "constant", "xavier_uniform", "xavier_normal",
                 "kaiming_uniform", "kaiming_normal", "orthogonal"):
        args = (0.5,) if name == "constant" else ()
        with pytest.warns(FutureWarning, match=f"`nn.init.{name}` is now deprecated in favor "
                                               f"of `nn.init.{name}_`"):
            assert getattr(t.nn.init, name)(w, *args) is w


def test_jit_runs_the_eager_python(t):
    def f(x):
        return x + 1
    assert t.jit.script(f) is f and t.jit.trace(f, (1,)) is f and t.jit.unused(f) is f
    assert t.jit.ignore(f) is f and t.jit.ignore(drop=True)(f) is f
    assert t.jit.is_scripting() is False and t.jit.is_tracing() is False


def test_profiler_is_a_no_op_context_manager(t):
    sched = t.profiler.schedule(wait=1, warmup=1, active=2)
    with t.profiler.profile(activities=[t.profiler.ProfilerActivity.CPU], schedule=sched,
                            record_shapes=True) as prof:
        with t.profiler.record_function("step"), t.autograd.profiler.record_function("x"):
            prof.step()
    with pytest.raises(ValueError, match="active must be a positive int"):
        t.profiler.schedule(wait=0, warmup=0, active=0)


def test_distributed_before_init_raises_as_torch(t, monkeypatch):
    # (a doctest or tests/test_distributed.py may have joined xad's group in this worker)
    from xad.distributed import world
    monkeypatch.setitem(world._state, "comm", None)
    assert t.distributed.is_available() is True
    for f in (t.distributed.get_rank, t.distributed.get_world_size):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            f()
    with pytest.raises(ValueError, match="backend 'ucc' is not one xad has"):
        t.distributed.init_process_group("ucc")


def test_distributed_world_of_one_through_torch_names():
    code = ("from xad import as_torch; t = as_torch.namespace()['torch']; "
            "d = t.distributed; d.init_process_group('gloo'); "
            "m = t.nn.parallel.DistributedDataParallel(t.nn.Linear(2, 1)); "
            "x = t.tensor([1.0, 3.0]); d.all_reduce(x, op=d.ReduceOp.SUM); d.broadcast(x, 0); "
            "g = [t.zeros(2)]; d.all_gather(g, x); "
            "print(d.get_rank(), d.get_world_size(), d.is_initialized(), type(m).__name__, "
            "x.tolist() == g[0].tolist() == [1.0, 3.0]); "
            "d.destroy_process_group()")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT, timeout=300)
    assert out.stdout.split() == ["0", "1", "True", "DataParallel", "True"], out.stderr[-2000:]


def test_script_paths_and_small_modules(t):
    assert t.utils.data.distributed.DistributedSampler is t.utils.data.DistributedSampler
    assert t.utils.data.dataloader.DataLoader is t.utils.data.DataLoader
    assert t.utils.data.sampler.RandomSampler is t.utils.data.RandomSampler
    assert t.utils.data.dataset.TensorDataset is t.utils.data.TensorDataset
    assert t.utils.hooks.RemovableHandle is xad.hooks.RemovableHandle
    assert t.multiprocessing.cpu_count() >= 1 and callable(t.multiprocessing.spawn)
    torch = pytest.importorskip("torch")
    aliases = {n for n in dir(torch.nn.common_types) if n.startswith("_") and n.endswith("_t")}
    assert aliases == {n for n in vars(t.nn.common_types) if n.endswith("_t")}
    with pytest.raises(NotImplementedError, match="places tensors by backend"):
        t.set_default_device("cuda")
    t.set_default_device("cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t.set_default_device(None)


def _fails(i: int) -> None:
    raise SystemExit(3 if i == 1 else 0)


def test_spawn_raises_when_a_process_fails(t):
    with pytest.raises(RuntimeError, match="process 1 exited with code 3"):
        t.multiprocessing.spawn(_fails, nprocs=2)
