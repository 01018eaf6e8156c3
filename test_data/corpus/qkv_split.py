import numpy as np

T = 20
D = 32


def qkv_scores(x: "f32[T, D]", w_qkv: "f32[D, 3 * D]") -> "f32[T, T]":
    # A fused QKV projection split three ways; causal scores from its first two parts.
    q, k, _v = np.split(x @ w_qkv, 3, axis=-1)
    s = q @ k.T / np.sqrt(D)
    causal = np.logical_not(np.triu(np.ones((T, T), dtype=bool), k=1))
    return np.where(causal, s, -np.inf)
