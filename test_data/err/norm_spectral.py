import numpy as np


def spectral(m: "f32[4, 4]"):
    return np.linalg.norm(m, ord=2)
