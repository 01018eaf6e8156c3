import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# ResNeXt-50's grouped 3×3: 32 groups, 128 → 128 channels at 28×28, padding 1.
N, C, H, W, O, K = 1, 128, 28, 28, 128, 3
P = 1
G = 32
Ho, Wo = 28, 28


def resnext_grouped3x3(x: "f32[N, C, H, W]", w: "f32[O, C // G, K, K]") -> "f32[N, O, Ho, Wo]":
    xp = np.pad(x, ((0, 0), (0, 0), (P, P), (P, P)))
    v = sliding_window_view(xp, (K, K), axis=(2, 3))
    v = v.reshape(N, G, C // G, Ho, Wo, K, K)
    wg = w.reshape(G, O // G, C // G, K, K)
    y = np.einsum("ngchwij,gocij->ngohw", v, wg).reshape(N, O, Ho, Wo)
    return y
