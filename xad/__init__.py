"""xad: automatic differentiation over the Python Array API (NumPy, CuPy, and more).

Example:
    >>> import xad
    >>> w = xad.tensor([[1.0], [2.0]], requires_grad=True)
    >>> y = xad.tanh(xad.tensor([[0.5, -0.5]]) @ w).sum()
    >>> y.backward(); w.grad.shape
    (2, 1)
"""

# order matters (ruff's import sorting is off here): the operations need Tensor first
from .tensor import Tensor
from . import autograd, dtypes, ops
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .backend import (
    Backend,
    BackendError,
    available_backends,
    get_backend,
    get_rng_state,
    initial_seed,
    manual_seed,
    resolve_backend,
    seed,
    set_rng_state,
    set_backend,
    use_backend,
)
from .context import context
from .dtypes import (
    DType,
    bool_,
    bfloat16,
    float16,
    float32,
    float64,
    get_default_dtype,
    complex64,
    complex128,
    int8,
    int16,
    int32,
    int64,
    set_default_dtype,
    uint8,
    uint16,
    uint32,
    uint64,
)
from .factories import (
    arange,
    empty,
    eye,
    full,
    full_like,
    linspace,
    multinomial,
    ones,
    ones_like,
    rand,
    randint,
    randn,
    randperm,
    tensor,
    zeros,
    zeros_like,
)
from .function import Function, FunctionCtx, once_differentiable
from .generator import Generator
from .ops import *  # noqa: F403
# the same names again, from the modules that define them (literal __all__s): type
# checkers and editors read these, as they cannot evaluate ops' computed __all__; at run
# time they rebind the same objects
from .ops.broadcast import *  # noqa: F403
from .ops.creation import *  # noqa: F403
from .ops.dtype_functions import *  # noqa: F403
from .ops.elementwise import *  # noqa: F403
from .ops.elementwise_math import *  # noqa: F403
from .ops.index_writes import *  # noqa: F403
from .ops.indexing import *  # noqa: F403
from .ops.inplace import *  # noqa: F403
from .ops.linalg import *  # noqa: F403
from .ops.manipulation import *  # noqa: F403
from .ops.matrix_exponential import *  # noqa: F403
from .ops.namespace_info import *  # noqa: F403
from .ops.normalization import *  # noqa: F403
from .ops.reduce import *  # noqa: F403
from .ops.select import *  # noqa: F403
from .ops.shape import *  # noqa: F403
from .ops.sorting import *  # noqa: F403
from .ops.special_functions import *  # noqa: F403
from .ops.unique_and_counts import *  # noqa: F403
from .ops.cumulative_extrema import *  # noqa: F403
from .ops.splits_and_windows import *  # noqa: F403
from .ops.strided import *  # noqa: F403
from .ops.scatter_reductions import *  # noqa: F403
from .ops.torch_reductions import *  # noqa: F403
from .ops.torch_compositions import *  # noqa: F403
from .ops.torch_special import *  # noqa: F403
from .ops.torch_special_bessel import *  # noqa: F403
from .ops.torch_special_polynomials import *  # noqa: F403
from .ops.torch_elementwise import *  # noqa: F403
from .ops.torch_placement import *  # noqa: F403
from .ops.torch_products import *  # noqa: F403
from .ops.transfer import *  # noqa: F403
from .utils.anomaly import AnomalyError, detect_anomaly
from .utils.gradcheck import GradcheckError, gradcheck, gradgradcheck
from . import data, nn, optim, viz
from . import fft, linalg
from . import torch_matrix_functions as _torch_matrix_functions  # noqa: F401  (x.svd(), x.det(), ...)
from . import torch_stft as _torch_stft  # noqa: F401  (x.stft(), x.istft())
from . import torch_tensor_methods as _torch_tensor_methods  # noqa: F401  (x.squeeze_(), x.new(), ...)
from . import torch_legacy_linalg as _torch_legacy_linalg  # noqa: F401  (x.lu(), x.lu_solve())
from . import torch_sequences as _torch_sequences  # noqa: F401  (x.nonzero_static())
from . import torch_histograms as _torch_histograms  # noqa: F401  (x.histogram())
from . import torch_draws as _torch_draws  # noqa: F401  (x.multinomial())
from . import torch_householder as _torch_householder  # noqa: F401  (x.geqrf(), x.ormqr())
from . import amp
from . import distributed
from . import distributions
from .transforms import (grad, hessian, hvp, jacfwd, jacobian, jacrev, jvp, linearize,
                         value_and_grad, vjp)
from .vmap import vmap
from .compile import CompiledFunction, compile
from .utils.checkpoint import checkpoint
from .utils.serialization import CheckpointError, load, save
from .utils.torch_checkpoint import load_torch
from .threads import get_num_threads, set_num_threads

bool = bool_  # xad.bool, as the standard names it
__array_api_version__ = "2024.12"  # xad is an Array API namespace (docs/ARRAY_API.md)

__version__ = "0.1.0"  # the one place: pyproject.toml reads it (dynamic version)
