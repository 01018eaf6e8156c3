import numpy as np

N = 2
C = 8
G = 4
L = 10
EPS = 1e-5


def group_norm(x: "f32[N, C, L]", w: "f32[C]", b: "f32[C]") -> "f32[N, C, L]":
    g = x.reshape(N, G, C // G, L)
    mu = g.mean(axis=(2, 3), keepdims=True)
    var = ((g - mu) ** 2).mean(axis=(-2, -1), keepdims=True)
    y = ((g - mu) / np.sqrt(var + EPS)).reshape(N, C, L)
    return y * w[:, None] + b.reshape(C, 1)
