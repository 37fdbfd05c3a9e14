"""torchvision.transforms' Compose, ToTensor and Normalize, for one grey image."""

import torch


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x


class ToTensor:
    """An (H, W) uint8 image to a (1, H, W) float tensor in [0, 1]."""

    def __call__(self, image):
        return (image.float() / 255.0).unsqueeze(0)


class Normalize:
    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def __call__(self, x):
        mean = torch.tensor(self.mean, dtype=x.dtype).view(-1, 1, 1)
        std = torch.tensor(self.std, dtype=x.dtype).view(-1, 1, 1)
        return (x - mean) / std
