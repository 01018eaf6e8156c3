import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# A 1-D transposed convolution (a vocoder's upsampling): kernel 4, stride 2, padding 1,
# 256 → 128 channels, 1024 → 2048 steps, written as numpy users write it: zeros between the
# inputs, padded, then a convolution with the flipped kernel.
N, C, L, O, K, S = 1, 256, 1024, 128, 4, 2
P = 1
Lz = (L - 1) * S + 1
Lo = (L - 1) * S - 2 * P + K


def conv_transpose1d_s2(x: "f32[N, C, L]", w: "f32[C, O, K]") -> "f32[N, O, Lo]":
    z = np.zeros((N, C, Lz), dtype=np.float32)
    z[:, :, ::S] = x
    zp = np.pad(z, ((0, 0), (0, 0), (K - 1 - P, K - 1 - P)))
    v = sliding_window_view(zp, (K,), axis=2)
    return np.einsum("nclk,cok->nol", v, w[:, :, ::-1])
