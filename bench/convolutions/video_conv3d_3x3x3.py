import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# A video network's 3-D convolution: 3×3×3, padding 1, 16 → 32 channels, 8 frames of 28×28.
N, C, T, H, W, O, K = 1, 16, 8, 28, 28, 32, 3
P = 1


def video_conv3d_3x3x3(x: "f32[N, C, T, H, W]", w: "f32[O, C, K, K, K]") -> "f32[N, O, T, H, W]":
    xp = np.pad(x, ((0, 0), (0, 0), (P, P), (P, P), (P, P)))
    v = sliding_window_view(xp, (K, K, K), axis=(2, 3, 4))
    return np.einsum("nctyxijk,ocijk->notyx", v, w)
