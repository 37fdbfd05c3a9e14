"""The primitive operations, each with its gradient rule beside it, and what is composed
from them. ``REGISTRY`` maps each primitive's name to its class (the tests iterate over it).

Importing this package installs the operations where the lower layers call them: Tensor's
methods and operators, and the engine's broadcast reduction.
"""

import sys as _sys

from .. import graph as _graph
from .. import tensor as _tensor
from . import attention as _attention  # noqa: F401  (registers attention, attention_grad)
from . import convolution as _convolution  # noqa: F401  (registers im2col, col2im)
from . import cross_entropy as _cross_entropy  # noqa: F401  (registers cross_entropy_mean)
from . import elementwise as _elementwise
from . import lu as _lu  # noqa: F401  (registers lu_factor, lu_pivots, lu_info, ...)
from . import mse as _mse  # noqa: F401  (registers mse_mean, mse_mean_grad)
from . import nll as _nll  # noqa: F401  (registers nll_rows, nll_rows_grad, count_targets)
from . import recurrent as _recurrent  # noqa: F401  (registers recurrent, recurrent_grad)
from . import torch_conventions as _torch_conventions  # noqa: F401  (Tensor's methods)
from ._apply import REGISTRY, Op, apply, binary
from .bitcast import view_dtype  # noqa: F401  (Tensor.view(dtype); not xad.*)
from .broadcast import *  # noqa: F403
from .broadcast import __all__ as _b
from .creation import *  # noqa: F403
from .creation import __all__ as _c
from .cumulative_extrema import *  # noqa: F403
from .cumulative_extrema import __all__ as _ce
from .dtype_functions import *  # noqa: F403
from .dtype_functions import __all__ as _dtf
from .elementwise import *  # noqa: F403
from .elementwise import __all__ as _e
from .elementwise_math import *  # noqa: F403
from .elementwise_math import __all__ as _em
from .index_writes import *  # noqa: F403
from .index_writes import __all__ as _iw
from .indexing import *  # noqa: F403
from .indexing import __all__ as _i
from .inplace import *  # noqa: F403
from .inplace import __all__ as _ip
from .linalg import *  # noqa: F403
from .linalg import __all__ as _l
from .manipulation import *  # noqa: F403
from .manipulation import __all__ as _m
from .matrix_exponential import *  # noqa: F403
from .matrix_exponential import __all__ as _me
from .namespace_info import *  # noqa: F403
from .namespace_info import __all__ as _ni
from .normalization import *  # noqa: F403
from .normalization import __all__ as _no

# Tensor's methods and torch.* under as_torch, not xad.*: NumPy's median is another number
from .order_statistics import median, mode, nanmedian, nanquantile, quantile  # noqa: F401
from .reduce import *  # noqa: F403
from .reduce import __all__ as _r
from .scatter_reductions import *  # noqa: F403
from .scatter_reductions import __all__ as _sr
from .select import *  # noqa: F403
from .select import __all__ as _sel
from .shape import *  # noqa: F403
from .shape import __all__ as _s
from .sorting import *  # noqa: F403
from .sorting import __all__ as _so
from .special_functions import *  # noqa: F403
from .special_functions import __all__ as _sf
from .splits_and_windows import *  # noqa: F403
from .splits_and_windows import __all__ as _sw
from .strided import *  # noqa: F403
from .strided import __all__ as _st
from .torch_compositions import *  # noqa: F403
from .torch_compositions import __all__ as _tc
from .torch_elementwise import *  # noqa: F403
from .torch_elementwise import __all__ as _te
from .torch_placement import *  # noqa: F403
from .torch_placement import __all__ as _tp
from .torch_products import *  # noqa: F403
from .torch_products import __all__ as _tpr
from .torch_reductions import *  # noqa: F403
from .torch_reductions import __all__ as _tr
from .torch_special import *  # noqa: F403
from .torch_special import __all__ as _tsp
from .torch_special_bessel import *  # noqa: F403
from .torch_special_bessel import __all__ as _tsb
from .torch_special_polynomials import *  # noqa: F403
from .torch_special_polynomials import __all__ as _tspo
from .transfer import *  # noqa: F403
from .transfer import __all__ as _t
from .unique_and_counts import *  # noqa: F403
from .unique_and_counts import __all__ as _uc

__all__ = ["REGISTRY", "Op", "apply", *_b, *_c, *_dtf, *_e, *_em, *_i, *_ip, *_l, *_m, *_me, *_ni,
           *_no, *_r, *_sel, *_s, *_so, *_sf, *_t, *_tc, *_tsp, *_tsb, *_tspo, *_tr, *_uc, *_ce,
           *_sw, *_sr, *_st, *_iw, *_te, *_tp, *_tpr]

_tensor.install_operations(_sys.modules[__name__], binary, _elementwise)
_graph.installed.sum_to = sum_to  # noqa: F405
