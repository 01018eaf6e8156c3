import numpy as np

# Cross-entropy against soft targets (label smoothing, distillation), averaged over the batch.
B = 512
V = 8192


def soft_cross_entropy(logits: "f32[B, V]", target: "f32[B, V]") -> "f32[]":
    m = logits.max(axis=-1, keepdims=True)
    logp = logits - m - np.log(np.exp(logits - m).sum(axis=-1, keepdims=True))
    return -(target * logp).sum(axis=-1).mean()
