"""Optimisers (``torch.optim``'s but Adafactor, Muon and SparseAdam: SGD, Adam, AdamW,
RMSprop, Adagrad, Adamax, NAdam, RAdam, Rprop, Adadelta, ASGD, LBFGS) and learning-rate
schedulers.

Example:
    >>> import xad
    >>> w = xad.tensor([1.0, -1.0], requires_grad=True)
    >>> opt = xad.optim.SGD([w], lr=0.25)
    >>> for _ in range(2):
    ...     opt.zero_grad(); (w * w).sum().backward(); opt.step()
    >>> w.tolist()
    [0.25, -0.25]
"""

from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad, adagrad
from .adam import Adam, AdamW, adam
from .adamax_nadam_radam import Adamax, NAdam, RAdam
from .asgd import ASGD
from .lbfgs import LBFGS
from .lr_swa import SWALR
from .optimizer import Optimizer
from .rmsprop import RMSprop, rmsprop
from .rprop import Rprop
from .sgd import SGD, sgd

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adamax", "NAdam",
           "RAdam", "Rprop", "Adadelta", "ASGD", "LBFGS", "SWALR",
           "lr_scheduler",
           "sgd", "adam", "rmsprop", "adagrad"]
