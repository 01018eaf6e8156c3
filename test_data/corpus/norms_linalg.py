import numpy as np

B = 6
D = 16


def norms_linalg(x: "f32[B, D]", m: "f32[B, 4, 5]"):
    unit = x / np.linalg.norm(x, axis=-1, keepdims=True)
    l1 = np.linalg.norm(x, ord=1, axis=1)
    linf = np.linalg.norm(x, ord=np.inf, axis=-1)
    l3 = np.linalg.norm(x, 3, 1)
    total = np.linalg.norm(x)
    fro = np.linalg.norm(m, axis=(1, 2))
    col = np.linalg.norm(m, ord=1, axis=(-2, -1))
    row = np.linalg.norm(m, ord=np.inf, axis=(1, 2), keepdims=True)
    return unit, l1, linf, l3, total, fro, col, row
