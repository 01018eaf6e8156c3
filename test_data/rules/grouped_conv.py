import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# A grouped 3×3 convolution of 4 channels a group (ResNeXt's cardinality) at 10 × 12 positions:
# no register tile fits (4 output channels a group; positions not a multiple of the vectors), so
# the loop over positions moves inside the reduction's 36 steps, which read windows along it.
N, G, C, O, H, W, K = 1, 4, 4, 4, 12, 14, 3


def grouped_conv(x: "f32[N, G, C, H, W]", w: "f32[G, O, C, K, K]") -> "f32[N, G, O, H - 2, W - 2]":
    return np.einsum("ngchwij,gocij->ngohw", sliding_window_view(x, (K, K), axis=(3, 4)), w)
