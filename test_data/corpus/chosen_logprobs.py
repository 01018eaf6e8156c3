import numpy as np

B = 4
T = 12
V = 96


def chosen_logprobs(logits: "f32[B, T, V]", actions: "i32[B, T]") -> "f32[B, T]":
    # A policy-gradient step's log-probabilities of the tokens sampled.
    m = np.max(logits, axis=-1, keepdims=True)
    logp = logits - m - np.log(np.sum(np.exp(logits - m), axis=-1, keepdims=True))
    return np.take_along_axis(logp, actions[..., None], axis=-1)[..., 0]
