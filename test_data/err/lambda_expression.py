import numpy as np


def f(x: "f32[4]"):
    g = lambda v: v * 2
    return g(x)
