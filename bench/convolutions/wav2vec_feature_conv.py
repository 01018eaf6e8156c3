import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# wav2vec 2.0's first feature convolution: kernel 10, stride 5, 1 → 512 channels over one second of 16 kHz audio.
N, C, L, O, K = 1, 1, 16000, 512, 10
S = 5
Lo = 3199


def wav2vec_feature_conv(x: "f32[N, C, L]", w: "f32[O, C, K]") -> "f32[N, O, Lo]":
    v = sliding_window_view(x, (K,), axis=2)
    v = v[:, :, ::S, :]
    y = np.einsum("nclk,ock->nol", v, w)
    return y
