import numpy as np

B = 16
V = 100


def cross_entropy(logits: "f32[B, V]", onehot: "f32[B, V]") -> "f32[]":
    m = logits.max(axis=-1, keepdims=True)
    logp = logits - m - np.log(np.exp(logits - m).sum(axis=-1, keepdims=True))
    return -(onehot * logp).sum(axis=-1).mean()
