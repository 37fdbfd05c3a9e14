"""``xad.compile``: record a function's array program once, replay it at array speed.

Files: :mod:`.recorder` (what the first call does, written down), :mod:`.program` (that
record simplified and generated as one Python function), :mod:`.compiled` (guards, the
cache, the eager fallback), :mod:`.cuda_graph` and :mod:`.fusion` (CuPy only, opt-in: CUDA
graphs, fused elementwise kernels). docs/COMPILE.md says what is captured and what is not.
"""

from .compiled import CompiledFunction, compile

__all__ = ["compile", "CompiledFunction"]
