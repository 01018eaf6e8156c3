import numpy as np

B = 4


def f(x: "f32[B, "):
    return x
