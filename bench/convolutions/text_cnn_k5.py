import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# A text CNN: kernel 5, 300 → 256 channels over 128 tokens, batch 16, with bias and ReLU (no padding).
N, C, L, O, K = 16, 300, 128, 256, 5
Lo = 124


def text_cnn_k5(x: "f32[N, C, L]", w: "f32[O, C, K]", b: "f32[O]") -> "f32[N, O, Lo]":
    v = sliding_window_view(x, (K,), axis=2)
    y = np.einsum("nclk,ock->nol", v, w)
    y = y + b[None, :, None]
    y = np.maximum(y, 0.0)
    return y
