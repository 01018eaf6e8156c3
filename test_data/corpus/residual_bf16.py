import ml_dtypes
import numpy as np

S = 24
D = 128


def residual_bf16(x: "bf16[S, D]", residual: "bf16[S, D]", w: "f32[D]"):
    # Fused add + norm with two outputs: the new residual stream (bfloat16) and the normed
    # activations, rounded through bfloat16 between the two steps as a bf16 model stores them.
    h = x.astype(np.float32) + residual.astype(np.float32)
    stored = h.astype(ml_dtypes.bfloat16)
    hs = stored.astype(np.float32)
    normed = hs / np.sqrt(np.mean(hs * hs, axis=-1, keepdims=True) + 1e-5) * w
    return stored, normed.astype(np.float32)
