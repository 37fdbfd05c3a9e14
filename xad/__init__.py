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
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .backend import (
    Backend,
    BackendError,
    available_backends,
    get_backend,
    manual_seed,
    resolve_backend,
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
from .function import Function, FunctionCtx
from .generator import Generator
from .ops import *  # noqa: F403
from .utils.anomaly import AnomalyError, detect_anomaly
from .utils.gradcheck import GradcheckError, gradcheck, gradgradcheck
from . import data, nn, optim, viz
from . import fft, linalg
from . import amp
from . import distributed
from .transforms import (grad, hessian, hvp, jacfwd, jacobian, jacrev, jvp, linearize,
                         value_and_grad, vjp)
from .vmap import vmap
from .compile import CompiledFunction, compile
from .utils.checkpoint import checkpoint
from .utils.serialization import CheckpointError, load, save

bool = bool_  # xad.bool, as the standard names it
__array_api_version__ = "2024.12"  # xad is an Array API namespace (docs/ARRAY_API.md)

__version__ = "0.1.0"
