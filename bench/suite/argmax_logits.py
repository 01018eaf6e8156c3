import numpy as np

B = 2048
V = 32000


def argmax_logits(logits: "f32[B, V]"):
    # Greedy decoding over a LLaMA-sized vocabulary: each row's most likely token.
    return np.argmax(logits, axis=-1)
