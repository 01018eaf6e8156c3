import numpy as np


def td(a: "f32[4, 5]", b: "f32[4, 6]"):
    return np.tensordot(a, b, axes=1)
