import numpy as np

B = 4
H = 128
T = 4096


def mla_decode(q: "f32[B, H, 576]", kv: "f32[B, T, 576]") -> "f32[B, H, 512]":
    s = np.einsum("bhd,btd->bht", q, kv) / np.sqrt(192.0)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return np.einsum("bht,btd->bhd", p, kv[:, :, :512])
