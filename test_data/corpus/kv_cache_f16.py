import numpy as np

H = 4
T = 96
D = 32


def kv_cache_f16(q: "f32[H, D]", k: "f16[H, T, D]", v: "f16[H, T, D]") -> "f32[H, D]":
    # Decode attention over a float16 KV cache.
    scores = np.einsum("hd,htd->ht", q, k.astype(np.float32)) / np.sqrt(D)
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return np.einsum("ht,htd->hd", p, v.astype(np.float32))
