import numpy as np

K = 200
C = 37


def assign(distances: "f32[K, C]", scores: "f32[K, C]"):
    # k-means assignment straight from the inputs (exact values: numpy's first index on ties is
    # the only right one), and a prediction from scaled scores (computed values).
    return np.argmin(distances, axis=1), np.argmax(scores * 0.5, axis=-1, keepdims=True)
