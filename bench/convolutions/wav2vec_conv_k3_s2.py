import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# wav2vec 2.0's later feature convolutions: kernel 3, stride 2, 512 → 512 channels, 3199 → 1599.
N, C, L, O, K = 1, 512, 3199, 512, 3
S = 2
Lo = 1599


def wav2vec_conv_k3_s2(x: "f32[N, C, L]", w: "f32[O, C, K]") -> "f32[N, O, Lo]":
    v = sliding_window_view(x, (K,), axis=2)
    v = v[:, :, ::S, :]
    y = np.einsum("nclk,ock->nol", v, w)
    return y
