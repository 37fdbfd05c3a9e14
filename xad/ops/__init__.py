"""The primitive operations, each with its gradient rule beside it, and what is composed
from them. ``REGISTRY`` maps each primitive's name to its class (the tests iterate over it).
"""

from ._apply import REGISTRY, Op, apply
from .elementwise import *  # noqa: F403
from .elementwise import __all__ as _e
from .indexing import *  # noqa: F403
from .indexing import __all__ as _i
from .inplace import *  # noqa: F403
from .inplace import __all__ as _ip
from .linalg import *  # noqa: F403
from .linalg import __all__ as _l
from .reduce import *  # noqa: F403
from .reduce import __all__ as _r
from .shape import *  # noqa: F403
from .shape import __all__ as _s
from .transfer import *  # noqa: F403
from .transfer import __all__ as _t

__all__ = ["REGISTRY", "Op", "apply", *_e, *_i, *_l, *_r, *_s, *_ip, *_t]
