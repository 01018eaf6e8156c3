import numpy as np

# All pairwise cosine similarities between two sets of embeddings.
N = 1024
M = 1024
D = 256


def cosine_similarity(a: "f32[N, D]", b: "f32[M, D]") -> "f32[N, M]":
    an = a / np.sqrt((a * a).sum(axis=-1, keepdims=True))
    bn = b / np.sqrt((b * b).sum(axis=-1, keepdims=True))
    return an @ bn.T
