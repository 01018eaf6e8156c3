import numpy as np
from scipy.special import log_softmax

B = 16
V = 50
SMOOTHING = 0.1


def label_smoothed_cross_entropy(logits: "f32[B, V]", labels: "i64[B]"):
    logp = log_softmax(logits, axis=-1)
    nll = -logp[np.arange(B), labels]
    smooth = -logp.mean(axis=-1)
    return ((1.0 - SMOOTHING) * nll + SMOOTHING * smooth).mean()
