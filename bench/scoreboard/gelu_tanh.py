import numpy as np

# GELU, tanh approximation, on an MLP's activations.
R = 2048
D = 4096


def gelu_tanh(x: "f32[R, D]") -> "f32[R, D]":
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
