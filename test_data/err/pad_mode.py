import numpy as np


def f(x: "f32[8, 16]"):
    return np.pad(x, 2, mode="mean")
