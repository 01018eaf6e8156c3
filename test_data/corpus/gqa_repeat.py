import numpy as np

B = 2
H = 8
KVH = 2
T = 24
D = 16


def gqa(q: "f32[B, H, T, D]", k: "f32[B, KVH, T, D]", v: "f32[B, KVH, T, D]") -> "f32[B, H, T, D]":
    # Grouped-query attention as reference code writes it: the key/value heads repeated.
    k = np.repeat(k, H // KVH, axis=1)
    v = np.repeat(v, H // KVH, axis=1)
    s = q @ k.swapaxes(-1, -2) / np.sqrt(D)
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    return p @ v
