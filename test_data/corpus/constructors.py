import numpy as np


def constructors(x: "f32[3, 4]"):
    o = np.ones((3, 4), dtype=np.float32) + x
    z = np.zeros(4) - x
    f = np.full((3, 1), 2.5) * x
    ol = np.ones_like(x) * 3
    zl = np.zeros_like(x) + 1
    fl = np.full_like(x, -1.5)
    return o, z, f, ol, zl, fl
