import numpy as np

# Grouped-query decode attention: 4 key/value heads each shared by 8 query heads, 16k tokens.
KV = 4
G = 8
T = 16384
D = 128


def gqa_decode_long(q: "f32[KV, G, D]", k: "f32[KV, T, D]", v: "f32[KV, T, D]") -> "f32[KV, G, D]":
    s = np.einsum("hgd,htd->hgt", q, k) / np.sqrt(128.0)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.einsum("hgt,htd->hgd", p / p.sum(axis=-1, keepdims=True), v)
