import numpy as np


def f(x: "f32[4]"):
    i = np.arange(4)
    i += x
    return i
