"""Neural-network building blocks: ``Module``, layers, losses, ``functional``, ``init``,
``utils`` (PyTorch's names, keywords and layouts).

Example:
    >>> import xad
    >>> net = xad.nn.Sequential(xad.nn.Linear(2, 4), xad.nn.ReLU(), xad.nn.Linear(4, 1))
    >>> loss = xad.nn.MSELoss()(net(xad.ones(3, 2)), xad.zeros(3, 1))
    >>> loss.backward(); net[0].weight.grad.shape
    (4, 2)
"""

import sys as _sys

from . import functional, init, rnn_utils, utils
from .activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    RReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softmax2d,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
)
from .adaptive_softmax import AdaptiveLogSoftmaxWithLoss
from .attention import MultiheadAttention
from .averaged_model import (
    AveragedModel,
    get_ema_avg_fn,
    get_ema_multi_avg_fn,
    get_swa_avg_fn,
    get_swa_multi_avg_fn,
    update_bn,
)
from .containers import Container, ModuleDict, ParameterDict, ParameterList
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .cross_map_lrn import CrossMapLRN2d
from .ctc import CTCLoss
from .data_parallel import DataParallel
from .distance import CosineSimilarity, PairwiseDistance
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout
from .embedding import Embedding
from .embedding_bag import Bilinear, EmbeddingBag
from .fold import Fold, Unfold
from .fractional_pooling import FractionalMaxPool2d, FractionalMaxPool3d
from .functional_call import functional_call
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .lazy import (
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    LazyConv1d,
    LazyConv2d,
    LazyConv3d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
    LazyConvTranspose3d,
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
    LazyLinear,
    UninitializedBuffer,
    UninitializedParameter,
)
from .linear import Flatten, Identity, Linear, Unflatten
from .losses import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    MultiLabelMarginLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    NLLLoss,
    NLLLoss2d,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
    TripletMarginWithDistanceLoss,
)
from .module import Buffer, IncompatibleKeys, Module, ModuleList, Parameter, Sequential
from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    GroupNorm,
    LayerNorm,
    LocalResponseNorm,
    RMSNorm,
)
from .padding import (
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)
from .pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    LPPool1d,
    LPPool2d,
    MaxPool1d,
    MaxPool2d,
    MaxUnpool1d,
    MaxUnpool2d,
)
from .pooling3d import (
    AdaptiveAvgPool3d,
    AdaptiveMaxPool3d,
    AvgPool3d,
    LPPool3d,
    MaxPool3d,
    MaxUnpool3d,
)
from .recurrent import GRU, LSTM, RNN, RNNBase
from .resampling import (
    ChannelShuffle,
    PixelShuffle,
    PixelUnshuffle,
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)
from .rnn_cells import GRUCell, LSTMCell, RNNCell, RNNCellBase
from .transformer import TransformerEncoder, TransformerEncoderLayer
from .transformer_decoder import Transformer, TransformerDecoder, TransformerDecoderLayer

__all__ = [
    "functional_call",
    "Module", "Parameter", "Buffer", "Sequential", "ModuleList", "IncompatibleKeys",
    "Linear", "Identity", "Flatten", "ReLU", "Tanh", "Sigmoid", "GELU", "Softplus",
    "Softmax", "LogSoftmax", "Dropout", "LayerNorm", "BatchNorm1d", "Embedding",
    "MSELoss", "L1Loss", "HuberLoss", "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss",
    "Conv1d", "Conv2d", "ConvTranspose2d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d",
    "BatchNorm2d", "GroupNorm", "Dropout2d",
    "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder", "Unflatten",
    "LeakyReLU", "RReLU", "ELU", "CELU", "SELU", "SiLU", "Mish", "Hardtanh", "ReLU6", "Hardsigmoid",
    "Hardswish", "LogSigmoid", "Softsign", "Tanhshrink", "GLU", "PReLU",
    "BCELoss", "KLDivLoss", "SmoothL1Loss", "PoissonNLLLoss", "GaussianNLLLoss",
    "MarginRankingLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss", "TripletMarginLoss",
    "TripletMarginWithDistanceLoss", "MultiLabelSoftMarginLoss",
    "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
    "ModuleDict", "ParameterList", "ParameterDict", "Upsample", "UpsamplingNearest2d",
    "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle", "MaxPool1d", "AvgPool1d",
    "AdaptiveAvgPool1d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "LPPool1d", "LPPool2d",
    "MaxUnpool1d", "MaxUnpool2d", "RMSNorm", "InstanceNorm1d",
    "InstanceNorm2d", "EmbeddingBag", "Bilinear", "TransformerDecoderLayer",
    "TransformerDecoder", "Transformer", "CTCLoss", "Softmin", "CosineSimilarity",
    "PairwiseDistance",
    "Conv3d", "ConvTranspose1d", "ConvTranspose3d", "MaxPool3d", "AvgPool3d",
    "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "MaxUnpool3d", "BatchNorm3d", "InstanceNorm3d",
    "SoftMarginLoss", "MultiMarginLoss", "MultiLabelMarginLoss",
    "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
    "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d",
    "Softshrink", "Hardshrink", "Threshold", "Softmax2d", "Dropout1d", "Dropout3d",
    "AlphaDropout", "Unfold", "Fold", "LocalResponseNorm", "ChannelShuffle",
    "AveragedModel", "update_bn", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
    "get_ema_avg_fn", "get_swa_avg_fn",
    "functional", "init", "utils",
    "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
    "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
    "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d",
    "UninitializedParameter", "UninitializedBuffer",
]

utils.rnn = rnn_utils  # type: ignore[attr-defined]  # xad.nn.utils.rnn, as torch.nn.utils.rnn
_sys.modules[__name__ + ".utils.rnn"] = rnn_utils
for _sub in ("parametrize", "parametrizations"):  # import xad.nn.utils.parametrize works
    _sys.modules[f"{__name__}.utils.{_sub}"] = getattr(utils, _sub)
__all__ += ["AdaptiveLogSoftmaxWithLoss", "Container", "CrossMapLRN2d", "DataParallel",
            "FeatureAlphaDropout", "FractionalMaxPool2d", "FractionalMaxPool3d", "NLLLoss2d",
            "LPPool3d"]
