import numpy as np

B = 6
V = 257
K = 8


def topk_tokens(logits: "f32[B, V]", temperature: "f32[]"):
    # Candidate tokens for top-k sampling: the K largest scaled logits, largest first, and
    # their probabilities under a softmax over the whole vocabulary.
    scaled = logits / temperature
    top = np.argsort(-scaled, axis=-1)[:, :K]
    p = np.exp(scaled - scaled.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return top, np.sort(p, axis=-1)[:, ::-1][:, :K]
