import numpy as np

V = 512
T = 64
D = 48


def embedding_lookup(wte: "f32[V, D]", wpe: "f32[T, D]", ids: "i64[T]") -> "f32[T, D]":
    # GPT-2's input: token embeddings plus learned positions.
    tok = np.take(wte, ids, axis=0)
    pos = wpe[np.arange(T)]
    return tok + pos
