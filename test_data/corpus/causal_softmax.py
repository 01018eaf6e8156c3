import numpy as np

T = 16


def causal_softmax(s: "f32[2, T, T]") -> "f32[2, T, T]":
    mask = np.tril(np.ones((T, T), dtype=np.float32)) > 0
    s = np.where(mask, s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return p / p.sum(axis=-1, keepdims=True)
