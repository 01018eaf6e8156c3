import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# A 3×3 convolution whose output positions (28) no tile of full vectors divides at 8 lanes: its
# output channels (32) do, in a transposed tile (channels in the vectors, positions in the rows).
N, C, H, W, O, K = 1, 16, 18, 30, 32, 3


def conv3x3_narrow(x: "f32[N, C, H, W]", w: "f32[O, C, K, K]") -> "f32[N, O, H - 2, W - 2]":
    return np.einsum("nchwij,ocij->nohw", sliding_window_view(x, (K, K), axis=(2, 3)), w)
