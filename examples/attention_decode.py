import numpy as np

B = 8
H = 32
T = 2048
D = 128


def attention_decode(q: "f32[B, H, D]", k: "f32[B, H, T, D]", v: "f32[B, H, T, D]") -> "f32[B, H, D]":
    s = np.einsum("bhd,bhtd->bht", q, k) / np.sqrt(D)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return np.einsum("bht,bhtd->bhd", p, v)
