import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# ResNet-50's stem: a 7×7 convolution, stride 2, padding 3, 3 → 64 channels at 224×224.
N, C, H, W, O, K = 1, 3, 224, 224, 64, 7
P = 3
S = 2
Ho, Wo = 112, 112


def resnet_stem7x7(x: "f32[N, C, H, W]", w: "f32[O, C, K, K]") -> "f32[N, O, Ho, Wo]":
    xp = np.pad(x, ((0, 0), (0, 0), (P, P), (P, P)))
    v = sliding_window_view(xp, (K, K), axis=(2, 3))
    v = v[:, :, ::S, ::S, :, :]
    y = np.einsum("nchwij,ocij->nohw", v, w)
    return y
