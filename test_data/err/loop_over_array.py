import numpy as np


def f(x: "f32[4, 8]"):
    total = x[0] * 0
    for row in x:
        total = total + row
    return total
