import numpy as np

# A rank-one update of a matrix (a Hebbian or Sherman-Morrison step).
M = 4096
N = 4096


def rank1_update(a: "f32[M, N]", x: "f32[M]", y: "f32[N]") -> "f32[M, N]":
    return a + 0.5 * x[:, None] * y[None, :]
