import numpy as np

L = 2


def f(x: "f32[4, L - 3]"):
    return x
