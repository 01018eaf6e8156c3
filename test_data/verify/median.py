import numpy as np

R = 64
S = 31


def median(x: "f32[R, S]"):
    # Each row's median and its three largest values, from numpy's sort (NaNs last).
    s = np.sort(x, axis=-1)
    return s[:, S // 2], s[:, -3:]
