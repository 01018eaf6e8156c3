import numpy as np

M = 6
K = 64
N = 40


def int8_weight_matmul(x: "f32[M, K]", w_q: "i8[K, N]", scale: "f32[N]") -> "f32[M, N]":
    # Weight-only int8 quantization: per-output-channel scales applied after the product.
    w = w_q.astype(np.float32)
    return (x @ w) * scale
