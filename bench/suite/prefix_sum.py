import numpy as np

B = 256
N = 1024


def prefix_sum(x: "f32[B, N]") -> "f32[B, N]":
    # Running sums along each row, written as a product with an upper triangle of ones:
    # O(N^2) per row as written, O(N) as the scan it is.
    return x @ np.triu(np.ones((N, N), dtype=np.float32))
