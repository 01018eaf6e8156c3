import numpy as np

B = 4
T = 33
D = 40


def masked_pool(h: "f32[B, T, D]", mask: "bool[B, T]") -> "f32[B, D]":
    # Mean pooling over the tokens a boolean padding mask keeps (a byte per element, 0 or 1).
    m = mask.astype(np.float32)
    s = (h * m[:, :, None]).sum(axis=1)
    return s / np.maximum(m.sum(axis=1, keepdims=True), 1.0)
