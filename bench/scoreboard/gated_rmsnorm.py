import numpy as np

# RMS norm gated by SiLU of a second stream (Mamba-2's output norm).
R = 4096
D = 2048


def gated_rmsnorm(x: "f32[R, D]", z: "f32[R, D]", w: "f32[D]") -> "f32[R, D]":
    y = x * (z / (1 + np.exp(-z)))
    return y / np.sqrt((y * y).mean(axis=-1, keepdims=True) + 1e-6) * w
