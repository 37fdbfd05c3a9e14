"""Write a small stand-in for MNIST in MNIST's own file format (IDX, as torchvision reads it
from ROOT/MNIST/raw/), from scikit-learn's bundled 8x8 digits (no download).

Each 8x8 digit (values 0..16) is scaled up 3x (24x24), padded to 28x28 and stretched to
0..255, as uint8. Run: python examples/pytorch/local/make_mnist.py ROOT [N_TRAIN] [N_TEST]
(the mnist example reads ROOT='../data' from its working directory).
"""

import struct
import sys
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits


def write_idx(path: Path, array: np.ndarray) -> None:
    code = {np.dtype(np.uint8): 0x08}[array.dtype]
    with open(path, "wb") as f:
        f.write(struct.pack(">HBB", 0, code, array.ndim))
        f.write(struct.pack(f">{array.ndim}I", *array.shape))
        f.write(array.tobytes())


def main(root: Path, n_train: int = 1500, n_test: int = 297) -> None:
    digits = load_digits()
    order = np.random.default_rng(0).permutation(len(digits.target))
    images = np.kron(digits.images[order], np.ones((3, 3)))  # 24x24
    images = np.pad(images, ((0, 0), (2, 2), (2, 2))) * (255 / 16)
    images = images.round().astype(np.uint8)
    labels = digits.target[order].astype(np.uint8)
    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    parts = {"train": slice(0, n_train), "t10k": slice(n_train, n_train + n_test)}
    for prefix, part in parts.items():
        write_idx(raw / f"{prefix}-images-idx3-ubyte", images[part])
        write_idx(raw / f"{prefix}-labels-idx1-ubyte", labels[part])


if __name__ == "__main__":
    main(Path(sys.argv[1]), *map(int, sys.argv[2:4]))
