import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# A padded 1-D convolution with the kernel flipped (a true convolution, as np.convolve's), many
# output channels: its input's windows overlap along the positions, so no panel of them can be
# packed, nor one of the weights running backwards; the register tile reads the input where it
# lies.
N, C, L, O, K = 1, 32, 256, 64, 3


def conv1d_windows(x: "f32[N, C, L]", w: "f32[O, C, K]") -> "f32[N, O, L]":
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1)))
    return np.einsum("nclk,ock->nol", sliding_window_view(xp, (K,), axis=2), w[:, :, ::-1])
