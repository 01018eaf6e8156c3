import numpy as np

N = 6
M = 4


def matmul_1d(v: "f32[N]", m: "f32[N, M]", w: "f32[M]", batch: "f32[2, N, M]"):
    return v @ m, m @ w, v @ v, np.matmul(v, batch), batch @ w
