import numpy as np

T = 8
H = 2
D = 16


def rope(x: "f32[T, H, D]", cos: "f32[T, 8]", sin: "f32[T, 8]") -> "f32[T, H, D]":
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    c = cos[:, None, :]
    s = sin[:, None, :]
    r1 = x1 * c - x2 * s
    r2 = x1 * s + x2 * c
    return np.stack([r1, r2], axis=-1).reshape(T, H, D)
