import numpy as np

R = 5
B = 64


def u8_cdf(counts: "u8[R, B]") -> "f32[R, B]":
    # A cumulative distribution from 8-bit histogram counts: numpy accumulates uint8 in its
    # default integer, so the running sums pass 255 without wrapping.
    c = np.cumsum(counts, axis=-1)
    return (c / np.maximum(c[:, -1:], 1)).astype(np.float32)
