import numpy as np


def f(x: "f32[4, 6]", v: "f32[4]"):
    y = np.zeros((4, 6), dtype=np.float32)
    y[:, ::2] = v
    return y + x
