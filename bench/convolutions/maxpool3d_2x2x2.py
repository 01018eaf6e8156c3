import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# A 3-D max pool: 2×2×2, stride 2, 64 channels, 16 frames of 56×56.
N, C, T, H, W = 1, 64, 16, 56, 56


def maxpool3d_2x2x2(x: "f32[N, C, T, H, W]") -> "f32[N, C, T // 2, H // 2, W // 2]":
    v = sliding_window_view(x, (2, 2, 2), axis=(2, 3, 4))[:, :, ::2, ::2, ::2]
    return v.max(axis=(-3, -2, -1))
