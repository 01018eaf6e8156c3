import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# A dilated transposed convolution written with zeros between the inputs: stride 3 (so the
# output's length, 22, is not a multiple of it), kernel 3 dilated by 2, padding 2.
N, C, L, O, K, S, D = 2, 3, 8, 4, 3, 3, 2
P = 2
Lz = (L - 1) * S + 1
Lo = (L - 1) * S - 2 * P + D * (K - 1) + 1


def conv_transpose1d_zeros(x: "f32[N, C, L]", w: "f32[C, O, K]") -> "f32[N, O, Lo]":
    z = np.zeros((N, C, Lz), dtype=np.float32)
    z[:, :, ::S] = x
    zp = np.pad(z, ((0, 0), (0, 0), (D * (K - 1) - P, D * (K - 1) - P)))
    v = sliding_window_view(zp, (D * (K - 1) + 1,), axis=2)[:, :, :, ::D]
    return np.einsum("nclk,cok->nol", v, w[:, :, ::-1])
