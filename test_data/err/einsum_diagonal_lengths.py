import numpy as np


def diag(a: "f32[4, 5]"):
    return np.einsum("ii->i", a)
