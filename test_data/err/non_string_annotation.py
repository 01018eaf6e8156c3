import numpy as np


def f(x: np.ndarray, y: "f32[4]"):
    return x + y
