import numpy as np


def views(x: "f32[4, 6]"):
    # transposes, strided slices and unit reshapes become index arithmetic, not copies
    return x.T[::2, 1:3][None] * 2.0, x.reshape(3, 8)
