import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# A 1-D convolution of stride 2 whose 203 output positions no vector divides: its windows read
# the input two floats apart, packed per panel of positions a row per tap (im2col's panel), so
# that the register tile loads them contiguous.
N, C, L, O, K = 1, 8, 407, 32, 3
S = 2
Lo = (L - K) // S + 1


def conv1d_strided(x: "f32[N, C, L]", w: "f32[O, C, K]") -> "f32[N, O, Lo]":
    v = sliding_window_view(x, (K,), axis=2)[:, :, ::S, :]
    return np.einsum("nclk,ock->nol", v, w)
