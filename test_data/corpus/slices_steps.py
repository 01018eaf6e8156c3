import numpy as np

N = 10


def slices_steps(x: "f32[N]", y: "f32[6, 8]"):
    even = x[::2]
    inner = x[1:-1]
    rev = x[::-1]
    tail = x[-3:]
    cols = y[:, 5:0:-2]
    strided = y[..., 1::3]
    block = y[1:5:3, -1:2:-1]
    return even, inner, rev, tail, cols, strided, block
