import numpy as np

B, T, D = 3, 10, 24


def masked_mean_pool(h: "f32[B, T, D]", mask: "bool[B, T]"):
    # Sentence embeddings: the mean of the token states a padding mask keeps.
    m = mask.astype(np.float32)
    s = (h * m[:, :, None]).sum(axis=1)
    return s / np.maximum(m.sum(axis=1, keepdims=True), 1.0)
