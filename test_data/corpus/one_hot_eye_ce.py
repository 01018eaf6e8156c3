import numpy as np

N, V = 32, 100
SMOOTH = 0.1


def smoothed_nll(logits: "f32[N, V]", targets: "i64[N]") -> float:
    # One-hot rows by indexing an identity matrix, label smoothing, a scalar loss via float().
    onehot = np.eye(V, dtype=np.float32)[targets]
    soft = onehot * (1.0 - SMOOTH) + SMOOTH / V
    logits = logits - logits.max(axis=1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    position = np.arange(V)[targets] / V
    return float(-(soft * log_probs).sum(axis=1).mean() + 0.0 * position.sum())
