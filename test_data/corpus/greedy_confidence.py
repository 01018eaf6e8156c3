import numpy as np

T = 7
V = 130


def greedy_confidence(logits: "f32[T, V]"):
    # Greedy decoding with a confidence: the chosen token and its log-probability, the
    # chosen logit read back with take_along_axis at the argmax.
    choice = logits.argmax(axis=-1)[:, None]
    chosen = np.take_along_axis(logits, choice, axis=-1)
    lse = np.log(np.exp(logits - chosen).sum(axis=-1, keepdims=True)) + chosen
    return choice[:, 0], (chosen - lse)[:, 0]
