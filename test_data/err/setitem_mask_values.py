import numpy as np


def f(x: "f32[8]", v: "f32[8]"):
    y = x.copy()
    y[x > 0] = v[:3]
    return y
