import numpy as np


def f(x: "f32[8, 3]"):
    return np.pad(x, ((0, 0), (3, 3)), mode="reflect")
