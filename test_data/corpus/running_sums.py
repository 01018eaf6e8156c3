import numpy as np

B = 3
N = 5


def running_sums(x: "f32[B, N]", y: "f32[N]") -> "f32[B, N]":
    # numpy's cumsum along each axis and over the flattened array, and a prefix sum
    # written as a product with an upper triangle of ones.
    rows = np.cumsum(x, axis=1)
    cols = x.cumsum(axis=0)
    flat = np.cumsum(x).reshape(B, N)
    tri = x @ np.triu(np.ones((N, N), dtype=np.float32))
    return rows + cols + flat + tri + np.cumsum(y > 0)
