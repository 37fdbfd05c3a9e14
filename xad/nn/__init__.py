"""Neural-network building blocks: ``Module``, layers, losses, ``functional``, ``init``,
``utils`` (PyTorch's names, keywords and layouts).

Example:
    >>> import xad
    >>> net = xad.nn.Sequential(xad.nn.Linear(2, 4), xad.nn.ReLU(), xad.nn.Linear(4, 1))
    >>> loss = xad.nn.MSELoss()(net(xad.ones(3, 2)), xad.zeros(3, 1))
    >>> loss.backward(); net[0].weight.grad.shape
    (4, 2)
"""

from . import functional, init, utils
from .activation import GELU, LogSoftmax, ReLU, Sigmoid, Softmax, Softplus, Tanh
from .attention import MultiheadAttention
from .conv import Conv1d, Conv2d, ConvTranspose2d
from .dropout import Dropout, Dropout2d
from .embedding import Embedding
from .functional_call import functional_call
from .linear import Flatten, Identity, Linear, Unflatten
from .losses import BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, L1Loss, MSELoss, NLLLoss
from .module import IncompatibleKeys, Module, ModuleList, Parameter, Sequential
from .normalization import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from .transformer import TransformerEncoder, TransformerEncoderLayer

__all__ = [
    "functional_call",
    "Module", "Parameter", "Sequential", "ModuleList", "IncompatibleKeys",
    "Linear", "Identity", "Flatten", "ReLU", "Tanh", "Sigmoid", "GELU", "Softplus",
    "Softmax", "LogSoftmax", "Dropout", "LayerNorm", "BatchNorm1d", "Embedding",
    "MSELoss", "L1Loss", "HuberLoss", "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss",
    "Conv1d", "Conv2d", "ConvTranspose2d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d",
    "BatchNorm2d", "GroupNorm", "Dropout2d",
    "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder", "Unflatten",
    "functional", "init", "utils",
]
