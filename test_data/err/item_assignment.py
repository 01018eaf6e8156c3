import numpy as np


def f(x: "f32[4, 6]"):
    y = x * 1
    y[0] = 0.0
    return y
