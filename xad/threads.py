"""``xad.set_num_threads``/``get_num_threads``: how many threads the CPU's libraries use,
as ``torch.set_num_threads``."""

from __future__ import annotations

import os
import sys

__all__ = ["set_num_threads", "get_num_threads"]

_threads: int | None = None  # what set_num_threads set


def set_num_threads(n: int) -> None:
    """Use ``n`` threads for CPU work: the BLAS and OpenMP pools of every library loaded
    (NumPy's OpenBLAS, MKL; through threadpoolctl), numexpr's pool (the ``fast`` extra:
    the NumPy backend's elementwise kernels) and PyTorch's intra-op pool where torch is
    loaded. A process-wide setting, as torch's is.

    Example:
        >>> import os, xad
        >>> xad.set_num_threads(os.cpu_count() or 1)  # the libraries' usual default
    """
    if type(n) is not int or n < 1:
        raise ValueError(f"set_num_threads: n must be a positive int, got {n!r}")
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        raise ImportError("set_num_threads needs threadpoolctl to set the BLAS threads: "
                          "pip install 'xad[fast]'") from None
    threadpool_limits(n)
    global _threads
    _threads = n
    for name in ("numexpr", "torch"):  # only where loaded: never imports them
        module = sys.modules.get(name)
        if module is not None:
            module.set_num_threads(n)


def get_num_threads() -> int:
    """The threads :func:`set_num_threads` set; before any, the most a loaded BLAS or OpenMP
    pool uses (the machine's cores without threadpoolctl).

    Example:
        >>> import os, xad
        >>> xad.set_num_threads(os.cpu_count() or 1)
        >>> xad.get_num_threads() == (os.cpu_count() or 1)
        True
    """
    if _threads is not None:
        return _threads
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return os.cpu_count() or 1
    return max((p["num_threads"] for p in threadpool_info()), default=os.cpu_count() or 1)
