import numpy as np

# Rows scaled to unit length (embeddings before a cosine similarity).
N = 8192
D = 1024


def l2_normalize(x: "f32[N, D]") -> "f32[N, D]":
    return x / np.sqrt((x * x).sum(axis=-1, keepdims=True) + 1e-12)
