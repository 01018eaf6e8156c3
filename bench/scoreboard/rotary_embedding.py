import numpy as np

# Rotary position embedding on queries, with the cos/sin tables as inputs.
T = 2048
H = 32
D = 128


def rotary_embedding(x: "f32[T, H, D]", cos: "f32[T, 64]", sin: "f32[T, 64]") -> "f32[T, H, D]":
    x1 = x[:, :, :64]
    x2 = x[:, :, 64:]
    c = cos[:, None, :]
    s = sin[:, None, :]
    return np.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], axis=-1)
