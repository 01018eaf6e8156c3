import numpy as np


def powers(x: "f32[4, 5]", y: "f32[5]"):
    sq = x ** 2
    cube = x ** 3
    root = np.abs(x) ** 0.5
    inv = x ** -1
    expo = 2.0 ** y
    gen = np.abs(x) ** y
    f = x ** np.float32(2)
    return sq, cube, root, inv, expo, gen, f
