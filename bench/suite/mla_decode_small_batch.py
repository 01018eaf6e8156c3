import numpy as np

# Decode MLA with few query rows per latent stream: 2 sequences, 16 heads, 8192 cached tokens
# (the latent cache, 37.7 MB, read once at the floor).
B = 2
H = 16
T = 8192


def mla_decode(q: "f32[B, H, 576]", kv: "f32[B, T, 576]") -> "f32[B, H, 512]":
    s = np.einsum("bhd,btd->bht", q, kv) / np.sqrt(192.0)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return np.einsum("bht,btd->bhd", p, kv[:, :, :512])
