"""The NumPy backend's numexpr kernels (the ``fast`` extra) against NumPy, eagerly: one
process per measurement, timed from outside in pairs (bench/README.md, "numexpr kernels").

    for i in 1 2 3 4 5; do for m in off on; do
        /usr/bin/time -f "$m %U %S" python bench/numexpr_kernels.py $m 2 softmax
    done; done      # paired runs: compare user + system time pair by pair

``on``: ``XAD_NUMEXPR=65536`` (numexpr for arrays of 64Ki elements and more); ``off``: unset.
The second argument is ``xad.set_num_threads``'s; the third the workload: ``softmax``,
``layer_norm`` or ``tanh`` (forward and backward of a 256 x 4096 float32 batch, 40 times).
"""

from __future__ import annotations

import os
import sys

mode, threads, workload = sys.argv[1], int(sys.argv[2]), sys.argv[3]
os.environ["XAD_NUMEXPR"] = "65536" if mode == "on" else "0"

import numpy as np  # noqa: E402

import xad  # noqa: E402
import xad.nn.functional as F  # noqa: E402

xad.set_num_threads(threads)
LAYERS = {"softmax": lambda x: F.softmax(x, axis=-1),
          "layer_norm": lambda x: F.layer_norm(x, 4096),
          "tanh": xad.tanh}
x = xad.tensor(np.random.default_rng(0).standard_normal((256, 4096), np.float32),
               requires_grad=True)
g = xad.ones_like(x)
for _ in range(40):
    LAYERS[workload](x).backward(g)
    x.grad = None
