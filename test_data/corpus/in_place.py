import numpy as np


def scale_shift(v, s):
    v = v * s
    v += 1.0
    return v


def in_place(x: "f32[4, 6]", w: "f32[6]"):
    y = x @ np.ones((6, 6))
    y += w
    y *= 0.5
    y -= x.mean(axis=-1, keepdims=True)
    y /= 2.0
    y **= 2
    return y, scale_shift(x, 3.0) + x
