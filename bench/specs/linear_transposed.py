import numpy as np

# A decode-time linear layer with the weight stored as PyTorch stores it, [out, in] (a spec the
# suite does not hold; bench/RESULTS.md).

M = 4
K = 4096
N = 4096


def linear(x: "f32[M, K]", w: "f32[N, K]", b: "f32[N]") -> "f32[M, N]":
    return x @ w.T + b
