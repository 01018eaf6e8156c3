import numpy as np


def accuracy(logits: "f32[64, 10]", labels: "i64[64]"):
    # An index result compared with the labels: a computed index feeds a computation.
    return np.mean(np.argmax(logits, axis=1) == labels)
