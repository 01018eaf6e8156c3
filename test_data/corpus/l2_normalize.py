import numpy as np

N = 48
D = 96


def l2_normalize(emb: "f32[N, D]", queries: "f32[4, D]"):
    # Cosine similarity of normalized embeddings, as retrieval code writes it.
    e = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    q = queries / np.maximum(np.linalg.norm(queries, axis=-1, keepdims=True), 1e-12)
    return q @ e.T
