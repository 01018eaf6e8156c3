import numpy as np

# A small SwiGLU MLP: two projections, the gate, and the down projection.
T = 128
D = 512
F = 1376


def swiglu_mlp(x: "f32[T, D]", w1: "f32[D, F]", w3: "f32[D, F]", w2: "f32[F, D]") -> "f32[T, D]":
    a = x @ w1
    h = a / (1 + np.exp(-a)) * (x @ w3)
    return h @ w2
