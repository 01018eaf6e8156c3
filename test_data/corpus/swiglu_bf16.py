import ml_dtypes
import numpy as np

T = 12
F = 176


def swiglu_bf16(gate: "bf16[T, F]", up: "bf16[T, F]") -> "bf16[T, F]":
    # A LLaMA MLP's activation on bfloat16 projections.
    g = gate.astype(np.float32)
    return (g / (1.0 + np.exp(-g)) * up.astype(np.float32)).astype(ml_dtypes.bfloat16)
