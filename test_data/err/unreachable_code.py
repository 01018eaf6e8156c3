import numpy as np


def f(x: "f32[4]"):
    y = np.exp(x)
    return y
    z = y * 2
    return z
