"""``torch.backends`` (``cudnn``, ``cuda.matmul``, ``mps``), ``torch.version`` and
``torch.__version__`` as ``python -m xad.as_torch`` gives them.

The cuDNN flags (``benchmark``, ``deterministic``, ``enabled``, ``allow_tf32``) are recorded
and read back with PyTorch's defaults; xad has no cuDNN, so they change nothing.
``torch.backends.cuda.matmul.allow_tf32`` is ``torch.set_float32_matmul_precision``'s
switch, as in PyTorch (``True`` is ``"high"``, ``False`` is ``"highest"``).
"""

from __future__ import annotations

import re
import types
from typing import Any

from .torch_functions import cuda_usable, get_float32_matmul_precision, set_float32_matmul_precision

__all__ = ["TorchVersion", "torch_version", "backends_modules", "version_module"]


class TorchVersion(str):
    """``torch.__version__``: a string that compares with version strings and tuples by
    release number, as ``torch.torch_version.TorchVersion``.

    Example:
        >>> from xad.torch_backends_flags import TorchVersion
        >>> v = TorchVersion("2.13.0+xad0.1.0")
        >>> v >= "2.0", v < (2, 14), v == (2, 13), v > "2.13"
        (True, True, True, False)
    """

    @staticmethod
    def _release(other: Any) -> tuple[int, ...]:
        if isinstance(other, tuple):
            parts = [int(p) for p in other]
        else:
            m = re.match(r"\s*v?(\d+(?:\.\d+)*)", str(other))
            if m is None:
                raise ValueError(f"torch.__version__: cannot compare with {other!r}, which is "
                                 f"not a version (write '2.0' or (2, 0))")
            parts = [int(p) for p in m.group(1).split(".")]
        while len(parts) > 1 and parts[-1] == 0:
            parts.pop()  # "2.13" == "2.13.0"
        return tuple(parts)

    def _cmp(self, other: Any) -> int:
        a, b = self._release(self), self._release(other)
        return (a > b) - (a < b)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (str, tuple)):
            return NotImplemented
        return self._cmp(other) == 0

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __lt__(self, other: Any) -> bool:
        return self._cmp(other) < 0

    def __le__(self, other: Any) -> bool:
        return self._cmp(other) <= 0

    def __gt__(self, other: Any) -> bool:
        return self._cmp(other) > 0

    def __ge__(self, other: Any) -> bool:
        return self._cmp(other) >= 0

    __hash__ = str.__hash__


def torch_version(xad_version: str) -> TorchVersion:
    """``torch.__version__``: the PyTorch whose meanings xad follows (2.13.0), with xad's own
    version as the local label (``"2.13.0+xad0.1.0"``, as a CPU wheel's ``"2.13.0+cpu"``)."""
    return TorchVersion(f"2.13.0+xad{xad_version}")


def _cuda_version() -> str | None:
    """``torch.version.cuda``: the CUDA runtime's ``"major.minor"`` on a CuPy backend."""
    from .torch_cuda import cuda_runtime_version
    return cuda_runtime_version()


class _VersionModule(types.ModuleType):
    """``torch.version``: ``__version__``, ``cuda`` (read when asked), ``hip``, ``debug``."""

    __version__: str
    hip = None
    debug = False
    git_version = "xad"

    @property
    def cuda(self) -> str | None:
        return _cuda_version()


def version_module(version: TorchVersion) -> types.ModuleType:
    """A fresh ``torch.version`` whose ``__version__`` is ``version``."""
    m = _VersionModule("torch.version")
    m.__version__ = version
    return m


class _Flags(types.ModuleType):
    """A ``torch.backends`` submodule whose flags are plain attributes, set and read back."""

    def __init__(self, name: str, **flags: Any) -> None:
        super().__init__(name)
        for k, v in flags.items():
            setattr(self, k, v)


class _Matmul:
    """``torch.backends.cuda.matmul``: ``allow_tf32`` is the float32 matmul precision."""

    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True

    @property
    def allow_tf32(self) -> bool:
        return get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, on: bool) -> None:
        set_float32_matmul_precision("high" if on else "highest")


def _false() -> bool:
    return False


def backends_modules() -> dict[str, types.ModuleType]:
    """``torch.backends`` and its submodules, by name (fresh flags, PyTorch's defaults)."""
    cudnn = _Flags("torch.backends.cudnn", benchmark=False, deterministic=False, enabled=True,
                   allow_tf32=True, benchmark_limit=10, is_available=_false,
                   version=lambda: None)
    cuda = _Flags("torch.backends.cuda", matmul=_Matmul(), is_built=cuda_usable,
                  flash_sdp_enabled=_false, mem_efficient_sdp_enabled=_false,
                  math_sdp_enabled=lambda: True)
    mps = _Flags("torch.backends.mps", is_available=_false, is_built=_false)
    subs = {"cudnn": cudnn, "cuda": cuda, "mps": mps}
    mods: dict[str, types.ModuleType] = {f"torch.backends.{k}": m for k, m in subs.items()}
    mods["torch.backends"] = _Flags("torch.backends", **subs)
    return mods
