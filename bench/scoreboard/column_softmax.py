import numpy as np

# Softmax down the columns (over the batch axis, as attention pooling over a set does).
N = 4096
F = 1024


def column_softmax(x: "f32[N, F]") -> "f32[N, F]":
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)
