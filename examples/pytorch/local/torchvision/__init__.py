"""A stand-in for the two pieces of torchvision that PyTorch's mnist example uses, written in
PyTorch (so it runs on real torch and, through ``python -m xad.as_torch``, on xad):
``datasets.MNIST`` reading the IDX files of ROOT/MNIST/raw/ (see ../make_mnist.py; it never
downloads) and ``transforms.Compose``/``ToTensor``/``Normalize``.

torchvision itself is not used because its CPU wheel for torch 2.13 is not on this project's
package index (the CUDA wheel fails to import against the CPU torch). Put this folder's parent
on PYTHONPATH when the real torchvision is not installed.
"""

from . import datasets, transforms

__all__ = ["datasets", "transforms"]
