import numpy as np


def f(x: "f32[8]", i: "i32[3]"):
    y = x.copy()
    y[i] = 0
    return y
