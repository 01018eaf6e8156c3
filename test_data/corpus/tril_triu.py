import numpy as np


def tril_triu(x: "f32[2, 5, 7]", m: "f32[6, 4]", v: "f32[5]"):
    return np.tril(x), np.triu(x, 1), np.tril(m, -1), np.triu(m, k=-2), np.tril(v, 1)
