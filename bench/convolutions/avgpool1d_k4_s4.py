import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# A 1-D average pool: kernel 4, stride 4, 256 channels, 8192 steps, batch 2.
N, C, L, K = 2, 256, 8192, 4
Lo = L // K


def avgpool1d_k4_s4(x: "f32[N, C, L]") -> "f32[N, C, Lo]":
    return sliding_window_view(x, (K,), axis=2)[:, :, ::K].mean(axis=-1)
