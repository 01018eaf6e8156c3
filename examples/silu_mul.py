import numpy as np

T = 512
F = 4096


def silu_mul(gate: "f32[T, F]", up: "f32[T, F]") -> "f32[T, F]":
    # SwiGLU: silu(gate) * up, with silu(g) = g * sigmoid(g)
    return gate / (1.0 + np.exp(-gate)) * up
