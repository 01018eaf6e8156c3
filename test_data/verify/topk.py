import numpy as np

B = 16
V = 300
K = 4


def topk(logits: "f32[B, V]", scores: "f32[B, V]"):
    # The K most likely tokens, most likely first: exact values, whose ties numpy's default kind
    # leaves in any order. Then the stable ascending order of computed scores: ties by index.
    top = np.argsort(logits, axis=-1)[:, ::-1][:, :K]
    ranks = np.argsort(scores * 0.5 + 1.0, axis=1, kind="stable")
    return top, ranks
