import numpy as np

B = 5
V = 301
K = 6


def topk_renormalized(logits: "f32[B, V]"):
    # Top-k sampling's distribution as it is usually written: the indices of the K largest
    # logits, their values gathered with take_along_axis, and a softmax over those K alone.
    idx = np.argsort(-logits, axis=-1)[:, :K]
    top = np.take_along_axis(logits, idx, axis=-1)
    p = np.exp(top - top[:, :1])
    return idx, p / p.sum(axis=-1, keepdims=True)
