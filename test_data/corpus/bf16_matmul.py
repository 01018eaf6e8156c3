from ml_dtypes import bfloat16
import numpy as np

M = 16
K = 64
N = 48


def bf16_matmul(a: "bf16[M, K]", w: "bf16[K, N]", bias: "f32[N]"):
    # Mixed precision: bfloat16 weights, float32 accumulation, a bfloat16 copy for the next layer.
    y = a.astype(np.float32) @ w.astype(np.float32) + bias
    return y, y.astype(bfloat16)
