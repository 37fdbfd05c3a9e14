"""``xad.set_num_threads``: how many threads the CPU's libraries use, as
``torch.set_num_threads``."""

from __future__ import annotations

import sys

__all__ = ["set_num_threads"]


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
    for name in ("numexpr", "torch"):  # only where loaded: never imports them
        module = sys.modules.get(name)
        if module is not None:
            module.set_num_threads(n)
