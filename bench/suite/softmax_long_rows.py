# Rows of 32 MB, past the last-level cache: there a second read of a row comes from memory, and
# the online normalizer (one pass for the maximum and the sum) pays.
import numpy as np

B = 4
N = 8388608


def softmax(x: "f32[B, N]") -> "f32[B, N]":
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)
