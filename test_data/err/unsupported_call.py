import numpy as np


def solve(a: "f32[4, 4]", b: "f32[4]"):
    return np.linalg.solve(a, b)
