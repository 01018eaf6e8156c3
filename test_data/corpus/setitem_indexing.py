import numpy as np


def assignments(x: "f32[3, 5, 4]", v: "f32[4]", m: "f32[3, 5]"):
    a = np.zeros((3, 5, 4), dtype=np.float32)
    a[...] = x
    a[1:, ::-2, 1] = 7.0
    a[0, None, 4:0:-3, :] = v
    a[..., 3] *= 2
    a[:, 2:100:7] = -1
    a[m > 0.5] = v
    a[2, 1:4, ::3] -= x[0, :3, 1:3]
    a[:-6:-1, 2::2] = x[::-1, 1::2] * 2.0
    a[..., ::-1] += x
    b = np.ones((2, 3), dtype=np.int32)
    b[0, :] = np.array([1.7, -2.7, 3.2])
    b[1, 1] = 5
    c = np.zeros(6, dtype=bool)
    c[::2] = True
    w = x[:, 0, 0].copy()
    w[-1] = 0
    return a, b, c, w, x
