"""The cupy adapter's availability checks, against stand-in modules and (if installed) CuPy."""

from __future__ import annotations

import importlib.util
import sys
from types import SimpleNamespace

import pytest

import xad.backend as B

B._ensure_xad_backends()
from xad_backends import cupy_backend as cb  # noqa: E402


class _Arr:
    """Just enough of an array for the probe's tiny computation."""

    def __init__(self, fail: Exception | None = None) -> None:
        self.fail = fail

    def __add__(self, other: object) -> _Arr:
        return self

    def sum(self) -> int:
        if self.fail is not None:
            raise self.fail
        return 3


def _fake_cupy(count=1, count_error=None, kernel_error=None):
    def get_device_count():
        if count_error is not None:
            raise count_error
        return count

    runtime = SimpleNamespace(getDeviceCount=get_device_count)
    return SimpleNamespace(cuda=SimpleNamespace(runtime=runtime),
                           arange=lambda n: _Arr(kernel_error))


def test_probe_passes_with_gpu_and_compiler():
    cb._probe(_fake_cupy())


def test_not_installed_says_pip_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` raise ImportError
    with pytest.raises(B.BackendError) as e:
        cb._import_cupy()
    assert "not installed" in str(e.value)
    assert "pip install 'xad[cupy]'" in str(e.value)


def test_no_driver_says_no_gpu():
    err = RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")
    with pytest.raises(B.BackendError) as e:
        cb._probe(_fake_cupy(count_error=err))
    msg = str(e.value)
    assert "no usable GPU" in msg and "cudaErrorInsufficientDriver" in msg and "numpy" in msg


def test_zero_devices_says_no_gpu():
    with pytest.raises(B.BackendError) as e:
        cb._probe(_fake_cupy(count=0))
    assert "no usable GPU" in str(e.value) and "numpy" in str(e.value)


def test_kernel_compile_failure_suggests_ctk():
    err = RuntimeError("CuPy failed to load libnvrtc.so.12: cannot open shared object file")
    with pytest.raises(B.BackendError) as e:
        cb._probe(_fake_cupy(kernel_error=err))
    msg = str(e.value)
    assert "compile" in msg and "pip install 'xad[ctk]'" in msg and "libnvrtc" in msg


def test_other_kernel_failure_is_reported():
    with pytest.raises(B.BackendError) as e:
        cb._probe(_fake_cupy(kernel_error=MemoryError("out of memory")))
    assert "out of memory" in str(e.value) and "ctk" not in str(e.value)


def test_scatter_add_choice():
    def scatter_add(a, i, v):
        return None

    def add_at(a, i, v):
        return None

    cupy = SimpleNamespace(add=SimpleNamespace(at=add_at))
    assert cb._scatter_add_fn(cupy, SimpleNamespace(scatter_add=scatter_add)) is add_at
    assert cb._scatter_add_fn(SimpleNamespace(), SimpleNamespace(
        scatter_add=scatter_add)) is scatter_add
    assert cb._scatter_add_fn(cupy, None) is add_at
    with pytest.raises(B.BackendError):
        cb._scatter_add_fn(SimpleNamespace(), SimpleNamespace())


def test_device_ids():
    assert cb._device_id(None) == 0
    assert cb._device_id(2) == 2
    assert cb._device_id("cuda:1") == 1
    assert cb._device_id("cuda") == 0
    assert cb._device_id(SimpleNamespace(id=3)) == 3
    with pytest.raises(ValueError):
        cb._device_id("cpu")


def _cupy_without_gpu() -> bool:
    if importlib.util.find_spec("cupy") is None:
        return False
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount()) == 0
    except Exception:
        return True


@pytest.mark.skipif(not _cupy_without_gpu(), reason="needs CuPy installed on a machine "
                    "without a usable GPU")
def test_real_cupy_without_gpu_raises_clearly(monkeypatch):
    monkeypatch.setattr(cb.CupyBackend, "_checked", False)
    with pytest.raises(B.BackendError, match="no usable GPU"):
        cb.CupyBackend.check_available()
    with pytest.raises(B.BackendError, match="no usable GPU"):
        B.set_backend("cupy")
    import xad

    if hasattr(xad, "set_backend"):  # the public name, once xad/__init__.py exports it
        with pytest.raises(B.BackendError, match="GPU"):
            xad.set_backend("cupy")
