import numpy as np

EPS = 1e-5


def f(x: "f32[EPS]"):
    return x
