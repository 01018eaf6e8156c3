import numpy as np

B = 2
L = 32
D = 16


def posenc(x: "f32[B, L, D]") -> "f32[B, L, D]":
    pe = np.zeros((L, D), dtype=np.float32)
    position = np.arange(L, dtype=np.float32)[:, None]
    div = np.exp(np.arange(0, D, 2, dtype=np.float32) * -(np.log(10000.0) / D))
    pe[:, 0::2] = np.sin(position * div)
    pe[:, 1::2] = np.cos(position * div)
    return x + pe
