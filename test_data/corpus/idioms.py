import numpy as np

N = 6
M = 5


def idioms(x: "f32[N, M]", y: "f32[N, M]", v: "f32[M]"):
    a = x.sum(0) + np.sum(x, 0) + x.max(1).sum() + np.mean(x, axis=None)
    b = np.where(x > 0, 1.0, 0.0) + np.maximum(0.0, x) + (1 - x) + 2 / (np.abs(x) + 1)
    c = np.exp(-x ** 2) - x.max() + np.float32(1.0) / (x * x + 1) + x.astype("float32")
    d = x @ y.T + (x.T @ y).T.sum() + x.T.T @ x.T
    e = np.concatenate([x, np.zeros((N, 1))], axis=1)[:, ::-1]
    f = np.einsum("ij->", x) + np.einsum("i->i", v) + x.mean(-1)[:, None]
    g = np.transpose(x, axes=(1, 0)).reshape((M, 2, -1)).sum(axis=len(x.shape))
    h = np.var(x, axis=-1, keepdims=True) + x.std(axis=0, keepdims=True) + np.clip(x, -0.5, 0.5) + y.var()
    return a, b, c, d, e, f, g, h
