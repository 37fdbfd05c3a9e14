"""The modules and names a PyTorch script touches in its first lines, added to
:func:`xad.as_torch.namespace`: ``torch.backends``, ``torch.version``, ``torch.Size``,
``torch.cuda``'s device functions, ``torch.jit``, ``torch.profiler``,
``torch.multiprocessing``, ``torch.distributed`` (over :mod:`xad.distributed`),
``torch.nn.parallel``, and the private base classes scripts subclass
(``torch.nn.modules.loss._Loss``, ``torch.optim.lr_scheduler._LRScheduler``, ...).
"""

from __future__ import annotations

import multiprocessing
import sys
import types
from typing import Any

from . import data, hooks, samplers
from . import torch_backends_flags as _flags
from . import torch_cuda as _cuda
from . import torch_private_bases as _bases
from . import torch_script_tools as _tools
from .nn import conv
from .optim import lr_base
from .torch_size import TorchSize

__all__ = ["add_script_modules"]

# torch.nn.common_types' annotation aliases (any value passes xad's own checks)
_COMMON_TYPES = (*(f"_{k}_{n}_t" for k in ("size", "scalar_or_tuple") for n in
                   (1, 2, 3, 4, 5, 6, "any")), "_size_2_opt_t", "_size_3_opt_t",
                 "_size_any_opt_t", "_ratio_2_t", "_ratio_3_t", "_ratio_any_t",
                 "_maybe_indices_t", "_tensor_list_t")
_DIST_BACKENDS = {None: None, "nccl": "nccl", "mpi": "mpi", "gloo": "mpi"}


def _dist() -> Any:
    from . import distributed
    return distributed


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: Any = None, world_size: int = -1, rank: int = -1,
                       **kwargs: Any) -> None:
    """``torch.distributed.init_process_group``: :func:`xad.distributed.init` (``"nccl"``
    is NCCL; ``"gloo"`` and ``"mpi"`` are MPI). The ranks come from the MPI launcher
    (``mpiexec -n N``), not from ``init_method``/``world_size``/``rank``."""
    if backend not in _DIST_BACKENDS:
        raise ValueError(f"torch.distributed.init_process_group: backend {backend!r} is not "
                         f"one xad has; use 'nccl' (CuPy), 'gloo' or 'mpi' (MPI)")
    seconds = 600.0 if timeout is None else float(getattr(timeout, "total_seconds",
                                                          lambda: timeout)())
    d = _dist()
    d.init(_DIST_BACKENDS[backend], timeout=seconds)
    for name, want, got in (("world_size", world_size, d.world_size()),
                            ("rank", rank, d.rank())):
        if want not in (-1, got):
            raise ValueError(f"torch.distributed.init_process_group: {name}={want}, but the "
                             f"launcher started this process as {name} {got}; xad takes "
                             f"ranks from mpiexec")


def _initialized(name: str) -> Any:
    d = _dist()
    if not d.is_initialized():
        raise ValueError(f"torch.distributed.{name}: Default process group has not been "
                         f"initialized, please make sure to call init_process_group.")
    return d


def get_rank(group: Any = None) -> int:
    """This process's rank (``xad.distributed.rank()``)."""
    return int(_initialized("get_rank").rank())


def get_world_size(group: Any = None) -> int:
    """The number of ranks (``xad.distributed.world_size()``)."""
    return int(_initialized("get_world_size").world_size())


def destroy_process_group(group: Any = None) -> None:
    """Checks the group exists; xad's communicator is released when the process exits."""
    _initialized("destroy_process_group")


def barrier(group: Any = None, **kwargs: Any) -> None:
    """``xad.distributed.barrier()``."""
    _initialized("barrier").barrier()


class ReduceOp:
    """``torch.distributed.ReduceOp``: the reductions xad's ``all_reduce`` has."""

    SUM, AVG, MAX = "sum", "mean", "max"


def all_reduce(tensor: Any, op: str = ReduceOp.SUM, group: Any = None,
               async_op: bool = False) -> None:
    """``torch.distributed.all_reduce``: ``tensor`` becomes the reduction over the ranks."""
    _no_async("all_reduce", group, async_op)
    _initialized("all_reduce").all_reduce(tensor, op=op)


def broadcast(tensor: Any, src: int, group: Any = None, async_op: bool = False) -> None:
    """``torch.distributed.broadcast``: ``tensor`` becomes rank ``src``'s."""
    _no_async("broadcast", group, async_op)
    _initialized("broadcast").broadcast(tensor, root=src)


def all_gather(tensor_list: list, tensor: Any, group: Any = None,
               async_op: bool = False) -> None:
    """``torch.distributed.all_gather``: ``tensor_list[i]`` becomes rank ``i``'s ``tensor``."""
    _no_async("all_gather", group, async_op)
    got = _initialized("all_gather").all_gather(tensor)
    if len(tensor_list) != len(got):
        raise ValueError(f"torch.distributed.all_gather: tensor_list has {len(tensor_list)} "
                         f"tensors for a world of {len(got)} ranks")
    for out, g in zip(tensor_list, got):
        out.copy_(g)


def _no_async(name: str, group: Any, async_op: bool) -> None:
    if group is not None or async_op:
        raise NotImplementedError(f"torch.distributed.{name}: xad's collectives run on the "
                                  f"default group and return when done (group=None, "
                                  f"async_op=False)")


def distributed_data_parallel(module: Any, device_ids: Any = None, output_device: Any = None,
                              dim: int = 0, broadcast_buffers: bool = True,
                              process_group: Any = None, bucket_cap_mb: float | None = None,
                              find_unused_parameters: bool = False, **kwargs: Any) -> Any:
    """``torch.nn.parallel.DistributedDataParallel``: :class:`xad.distributed.DataParallel`
    (the model is on the backend's device already; ``device_ids`` is not needed)."""
    if process_group is not None or dim != 0:
        raise NotImplementedError("DistributedDataParallel: xad's DataParallel runs over the "
                                  "default process group along dim 0 only")
    return _dist().DataParallel(module, bucket_mb=25 if bucket_cap_mb is None else bucket_cap_mb,
                                find_unused_parameters=find_unused_parameters,
                                broadcast_buffers=broadcast_buffers)


def _distributed_modules(mod: Any) -> dict[str, types.ModuleType]:
    dist = mod("torch.distributed", init_process_group=init_process_group, get_rank=get_rank,
               get_world_size=get_world_size, destroy_process_group=destroy_process_group,
               barrier=barrier, is_available=lambda: True, ReduceOp=ReduceOp,
               all_reduce=all_reduce, broadcast=broadcast, all_gather=all_gather,
               is_initialized=lambda: bool(_dist().is_initialized()))
    parallel = mod("torch.nn.parallel", DistributedDataParallel=distributed_data_parallel)
    return {"torch.distributed": dist, "torch.nn.parallel": parallel}


def _private_bases(mods: dict[str, types.ModuleType]) -> None:
    """The private classes PyTorch scripts subclass, where PyTorch keeps them."""
    for name, cls in (("nn.modules.loss._Loss", _bases._Loss),
                      ("nn.modules.loss._WeightedLoss", _bases._WeightedLoss),
                      ("nn.modules.batchnorm._BatchNorm", _bases._BatchNorm),
                      ("nn.modules.batchnorm._NormBase", _bases._NormBase),
                      ("nn.modules.conv._ConvNd", conv._ConvNd),
                      ("optim.lr_scheduler._LRScheduler", lr_base.LRScheduler)):
        module, _, attr = name.rpartition(".")
        setattr(mods[f"torch.{module}"], attr, cls)


def _data_modules(mod: Any) -> dict[str, types.ModuleType]:
    names = {"dataloader": data, "dataset": data, "sampler": samplers,
             "distributed": samplers}
    return {f"torch.utils.data.{k}": mod(f"torch.utils.data.{k}", v) for k, v in names.items()}


def _tool_modules(mod: Any) -> dict[str, types.ModuleType]:
    jit = mod("torch.jit", **{n: getattr(_tools, n) for n in (
        "script", "trace", "ignore", "unused", "export", "is_scripting", "is_tracing")})
    profiler = mod("torch.profiler", **{n: getattr(_tools, n) for n in (
        "profile", "record_function", "ProfilerActivity", "schedule")})
    mp = mod("torch.multiprocessing", multiprocessing, spawn=_tools.spawn)
    return {"torch.jit": jit, "torch.profiler": profiler, "torch.multiprocessing": mp,
            "torch.autograd.profiler": mod("torch.autograd.profiler", profile=_tools.profile,
                                           record_function=_tools.record_function),
            "torch.utils.hooks": mod("torch.utils.hooks", RemovableHandle=hooks.RemovableHandle),
            "torch.nn.common_types": mod("torch.nn.common_types", **dict.fromkeys(
                _COMMON_TYPES, Any))}


def add_script_modules(torch: Any, mods: dict[str, types.ModuleType], mod: Any) -> None:
    """Add the script-level names to ``torch`` and the modules to ``mods`` (``mod`` makes a
    namespace module, as ``xad.as_torch._module``)."""
    version = _flags.torch_version(sys.modules["xad"].__version__)
    new = {**_flags.backends_modules(), **_distributed_modules(mod), **_data_modules(mod),
           **_tool_modules(mod), "torch.version": _flags.version_module(version)}
    _private_bases(mods)
    for full in sorted(new, key=lambda k: k.count(".")):  # parents first
        parent, _, leaf = full.rpartition(".")
        setattr(torch if parent == "torch" else mods[parent], leaf, new[full])
        mods[full] = new[full]
    for k in _cuda.__all__[:-1]:
        setattr(torch.cuda, k, getattr(_cuda, k))
    for k, v in _tools.deprecated_init_aliases().items():
        setattr(mods["torch.nn.init"], k, v)
    torch.__version__, torch.Size = version, TorchSize
    torch.set_default_device = _tools.set_default_device
    torch.get_default_device = _tools.get_default_device
