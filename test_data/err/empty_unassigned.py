import numpy as np


def rot(x: "f32[4, 8]"):
    out = np.empty_like(x)
    out[:, 1:] = x[:, 1:] * 2
    return out
