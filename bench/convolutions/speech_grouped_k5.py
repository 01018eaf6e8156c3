import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# A grouped 1-D convolution: 4 groups, kernel 5, padding 2, 256 → 256 channels, 1000 frames, batch 2.
N, C, L, O, K = 2, 256, 1000, 256, 5
P = 2
G = 4
Lo = 1000


def speech_grouped_k5(x: "f32[N, C, L]", w: "f32[O, C // G, K]") -> "f32[N, O, Lo]":
    xp = np.pad(x, ((0, 0), (0, 0), (P, P)))
    v = sliding_window_view(xp, (K,), axis=2)
    v = v.reshape(N, G, C // G, Lo, K)
    y = np.einsum("ngclk,gock->ngol", v, w.reshape(G, O // G, C // G, K)).reshape(N, O, Lo)
    return y
