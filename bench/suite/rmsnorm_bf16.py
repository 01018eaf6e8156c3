import ml_dtypes
import numpy as np

B = 4096
D = 4096
EPS = 1e-6


def rmsnorm_bf16(x: "bf16[B, D]", w: "bf16[D]") -> "bf16[B, D]":
    # A bfloat16 model's RMSNorm: float32 inside, 64 MiB of traffic a call.
    h = x.astype(np.float32)
    h = h / np.sqrt(np.mean(h * h, axis=-1, keepdims=True) + EPS)
    return (h * w.astype(np.float32)).astype(ml_dtypes.bfloat16)
