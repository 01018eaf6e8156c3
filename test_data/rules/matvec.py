import numpy as np

# A matrix-vector product: one token through a 4096² layer.
M = 4096
K = 4096


def matvec(w: "f32[M, K]", x: "f32[K]") -> "f32[M]":
    return w @ x
