import numpy as np


def f(x: "f32[4]"):
    i = 0
    while i < 3:
        x = x * 2
        i += 1
    return x
