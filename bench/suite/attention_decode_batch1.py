import numpy as np

# Decode attention at batch one with one key/value head (multi-query attention): no batch or
# head loop to share among the cores, so the sequence is split instead (split-K).
B = 1
H = 1
T = 65536
D = 128


def attention_decode(q: "f32[B, H, D]", k: "f32[B, H, T, D]", v: "f32[B, H, T, D]") -> "f32[B, H, D]":
    s = np.einsum("bhd,bhtd->bht", q, k) / np.sqrt(D)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return np.einsum("bht,bhtd->bhd", p, v)
