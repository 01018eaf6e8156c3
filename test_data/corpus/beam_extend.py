import numpy as np

B = 4
V = 90


def beam_extend(logp: "f32[B, V]", scores: "f32[B]"):
    # Each beam extended by its best next token: the token, and the beam's score plus that
    # token's log-probability read back with advanced indexing.
    best = np.argmax(logp, axis=-1)
    return best, scores + logp[np.arange(B), best]
