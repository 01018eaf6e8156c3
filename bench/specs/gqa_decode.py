import numpy as np

# Grouped-query decode attention: 8 key/value heads, each shared by 4 query heads (a spec the
# suite does not hold; bench/RESULTS.md).

B = 1
HKV = 8
G = 4
T = 4096
D = 128


def gqa_decode(q: "f32[B, HKV, G, D]", k: "f32[B, HKV, T, D]", v: "f32[B, HKV, T, D]") -> "f32[B, HKV, G, D]":
    s = np.einsum("bhgd,bhtd->bhgt", q, k) / np.sqrt(128.0)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return np.einsum("bhgt,bhtd->bhgd", p, v)
