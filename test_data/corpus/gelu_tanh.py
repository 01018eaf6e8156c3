import numpy as np

N = 64
D = 256


def gelu_tanh(x: "f32[N, D]") -> "f32[N, D]":
    c = np.sqrt(2.0 / np.pi)
    return 0.5 * x * (1.0 + np.tanh(c * (x + 0.044715 * x ** 3)))
