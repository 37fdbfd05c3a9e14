"""``xad.distributed``: data-parallel training over MPI (``mpi4py``) and NCCL (CuPy).

``init``, ``rank``, ``world_size``, ``barrier``, ``is_initialized``; the collectives
``all_reduce``, ``broadcast``, ``all_gather``, ``reduce_scatter``; ``DataParallel``;
``SyncBatchNorm``; ``save`` (rank 0 writes a checkpoint that every rank may load). See
docs/DISTRIBUTED.md.
"""

from .collectives import all_gather, all_reduce, broadcast, reduce_scatter
from .data_parallel import DataParallel
from .sync_batchnorm import SyncBatchNorm
from .world import barrier, init, is_initialized, rank, save, world_size

__all__ = ["init", "is_initialized", "rank", "world_size", "barrier", "save", "all_reduce",
           "broadcast", "all_gather", "reduce_scatter", "DataParallel", "SyncBatchNorm"]
