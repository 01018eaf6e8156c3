import numpy as np


def comparisons(x: "f32[5, 4]", y: "f32[4]"):
    pos = (x > 0) * x
    smaller = np.where(x < y, x, y)
    count = (x >= 0).sum(axis=0)
    ne = (x != y).astype(np.float32)
    both = ((x <= 0.5) & (x > -0.5)).astype(np.float32)
    either = (x == y) | (x > 1.0)
    inv = ~(x > 0)
    return pos, smaller, count, ne, both, either * 1.0, inv * 2.0
