import numpy as np

T = 24
D = 16


def causal_attention_weights(q: "f32[T, D]", k: "f32[T, D]"):
    scores = q @ k.T / np.sqrt(D)
    mask = np.triu(np.ones((T, T), dtype=bool), k=1)
    scores[mask] = -np.inf
    scores[:, 0] += 0.5  # an attention sink's bias on the first position
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights
