import ml_dtypes
import numpy as np

R = 32
D = 256
EPS = 1e-6


def rmsnorm_bf16(x: "bf16[R, D]", weight: "bf16[D]") -> "bf16[R, D]":
    # Upcast, normalize in float32, scale, round back: how LLaMA-style models write it.
    h = x.astype(np.float32)
    variance = np.mean(h * h, axis=-1, keepdims=True)
    h = h / np.sqrt(variance + EPS)
    return (h * weight.astype(np.float32)).astype(ml_dtypes.bfloat16)
