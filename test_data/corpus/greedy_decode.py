import numpy as np

B = 4
T = 12
V = 503


def greedy_decode(logits: "f32[B, T, V]", temperature: "f32[]"):
    # The next token of each sequence: the most likely at the last position.
    last = logits[:, -1, :] / temperature
    return np.argmax(last, axis=-1)
