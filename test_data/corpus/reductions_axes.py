import numpy as np

A = 3
B = 4
C = 5


def reductions_axes(x: "f32[A, B, C]"):
    s = x.sum(axis=-2)
    m = np.max(x, axis=(0, -1), keepdims=True)
    n = np.min(x, axis=(2, 0))
    mu = x.mean(axis=(-2, -1), keepdims=True)
    total = np.sum(x, None, np.float64) + x.max() - x.min(None, None, False) + np.mean(x, dtype=np.float32)
    return s, m, n, mu, total
