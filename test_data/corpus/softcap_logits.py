import numpy as np

S = 16
V = 384
CAP = 30.0


def softcap_logits(logits: "f32[S, V]", temperature: "f32[S]") -> "f32[S, V]":
    # Gemma-style logit soft-capping, then a temperature-scaled log-softmax.
    capped = CAP * np.tanh(logits / CAP)
    z = capped / temperature[:, None]
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
