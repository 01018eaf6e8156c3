import numpy as np

B = 256
V = 32000
K = 8


def topk_logits(logits: "f32[B, V]"):
    # Top-k sampling's candidates over a LLaMA-sized vocabulary, as people write it: the K
    # most likely tokens of each row, most likely first.
    return np.argsort(logits, axis=-1)[:, ::-1][:, :K]
