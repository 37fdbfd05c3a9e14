"""Layers and losses as functions (``xad.nn.functional``, usually imported as ``F``).

Everything here is composed from xad's primitive operations, so it runs on every backend and
is differentiable to any order. Array-shaped arguments follow the Array API (``axis``);
``dim=`` is accepted too, for PyTorch habits.
"""

from __future__ import annotations

from .activations import *  # noqa: F403
from .activations import __all__ as _activations
from .attention import *  # noqa: F403
from .attention import __all__ as _attention
from .conv import *  # noqa: F403
from .conv import __all__ as _conv
from .ctc import *  # noqa: F403
from .ctc import __all__ as _ctc
from .embedding_bag import *  # noqa: F403
from .embedding_bag import __all__ as _embedding_bag
from .fixed_keyword_forms import *  # noqa: F403
from .fixed_keyword_forms import __all__ as _fixed_keyword_forms
from .fractional_pooling import *  # noqa: F403
from .fractional_pooling import __all__ as _fractional_pooling
from .grid_sampling import *  # noqa: F403
from .grid_sampling import __all__ as _grid_sampling
from .layers import *  # noqa: F403
from .layers import __all__ as _layers
from .likelihood_losses import *  # noqa: F403
from .likelihood_losses import __all__ as _likelihood_losses
from .losses import *  # noqa: F403
from .losses import __all__ as _losses
from .margin_losses import *  # noqa: F403
from .margin_losses import __all__ as _margin_losses
from .multi_head_attention import *  # noqa: F403
from .multi_head_attention import __all__ as _multi_head_attention
from .normalization import *  # noqa: F403
from .normalization import __all__ as _normalization
from .padding import *  # noqa: F403
from .padding import __all__ as _padding
from .pooling import *  # noqa: F403
from .pooling import __all__ as _pooling
from .pooling3d import *  # noqa: F403
from .pooling3d import __all__ as _pooling3d
from .resampling import *  # noqa: F403
from .resampling import __all__ as _resampling
from .unit_scaling import *  # noqa: F403
from .unit_scaling import __all__ as _unit_scaling

__all__ = [*_layers, *_losses, *_conv, *_pooling, *_padding, *_attention, *_activations,
           *_likelihood_losses, *_margin_losses, *_resampling,
           *_embedding_bag, *_normalization, *_ctc, *_unit_scaling, *_pooling3d,
           *_grid_sampling, *_fixed_keyword_forms, *_multi_head_attention,
           *_fractional_pooling]

# last, over the names above: the losses that also take PyTorch's size_average= and reduce=
from .legacy_reduction import *  # noqa: E402, F403
