import numpy as np


def squeeze_dims(x: "f32[1, 5, 1, 3]"):
    a = np.squeeze(x)
    b = x.squeeze(axis=2)
    c = np.squeeze(x, axis=(0, 2)).sum(axis=0)
    return a, b, c
