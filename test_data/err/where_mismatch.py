import numpy as np


def pick(c: "f32[4, 5]", a: "f32[4, 5]", b: "f32[4]"):
    return np.where(c > 0, a, b)
