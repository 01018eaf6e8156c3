import numpy as np


def broken(x: "f32[4]"):
    return np.exp(x +)
