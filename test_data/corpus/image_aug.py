import numpy as np

B = 3
H = 12
W = 10
C = 3


def augment(img: "f32[B, H, W, C]", mean: "f32[C]", std: "f32[C]") -> "f32[B, C, H, W]":
    # A flip augmentation and per-channel normalization, then channels first for the network.
    flipped = np.flip(img, axis=2)
    x = (flipped - mean) / std
    return np.moveaxis(x, -1, 1).copy()
