import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# R(2+1)D's temporal convolution: 3×1×1, padding 1 in time, 64 → 64 channels, 16 frames of 14×14.
N, C, T, H, W, O, K = 1, 64, 16, 14, 14, 64, 3
P = 1


def video_conv3d_temporal(x: "f32[N, C, T, H, W]", w: "f32[O, C, K]") -> "f32[N, O, T, H, W]":
    xp = np.pad(x, ((0, 0), (0, 0), (P, P), (0, 0), (0, 0)))
    v = sliding_window_view(xp, (K,), axis=2)
    return np.einsum("ncthwk,ock->nothw", v, w)
