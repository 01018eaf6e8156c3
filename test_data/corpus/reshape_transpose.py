import numpy as np


def reshape_transpose(x: "f32[2, 3, 4]", m: "f32[6, 4]"):
    flat = x.reshape(-1) + x.reshape(-2)
    r = x.reshape(6, 4) + m
    s = np.reshape(m, (4, -1)) + np.reshape(m, shape=(4, 6), order="C")
    t = m.T @ m
    p = x.transpose(1, 0, 2)
    q = np.transpose(x, (2, 0, 1))
    full = np.transpose(x)
    sw = np.swapaxes(x, 0, -1) + x.swapaxes(2, 0)
    return flat, r, s, t, p, q, full, sw
