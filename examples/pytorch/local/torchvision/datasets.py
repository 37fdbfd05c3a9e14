"""torchvision.datasets.MNIST over the IDX files in ROOT/MNIST/raw/ (never downloads)."""

import os
import struct

import torch


def _read_idx(path):
    with open(path, "rb") as f:
        _, code, ndim = struct.unpack(">HBB", f.read(4))
        shape = struct.unpack(f">{ndim}I", f.read(4 * ndim))
        if code != 0x08:
            raise ValueError(f"{path}: only uint8 IDX files are read here")
        data = f.read()
    return torch.tensor(list(data), dtype=torch.uint8).view(*shape)


class MNIST(torch.utils.data.Dataset):
    def __init__(self, root, train=True, transform=None, target_transform=None,
                 download=False):
        raw = os.path.join(root, "MNIST", "raw")
        prefix = "train" if train else "t10k"
        images = os.path.join(raw, f"{prefix}-images-idx3-ubyte")
        if not os.path.exists(images):
            raise RuntimeError(f"MNIST: {images} not found (this stand-in never downloads; "
                               f"write the files with examples/pytorch/local/make_mnist.py)")
        self.data = _read_idx(images)
        self.targets = _read_idx(os.path.join(raw, f"{prefix}-labels-idx1-ubyte")).long()
        self.transform, self.target_transform = transform, target_transform

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        image, target = self.data[index], int(self.targets[index])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target
