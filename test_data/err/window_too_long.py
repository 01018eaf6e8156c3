import numpy as np

N = 8


def window_too_long(x: "f32[4, N]") -> "f32[4, 1, 9]":
    return np.lib.stride_tricks.sliding_window_view(x, 9, axis=1)
