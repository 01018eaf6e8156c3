import numpy as np

V = 400
D = 32
B = 6
L = 10


def embedding_bag(table: "f32[V, D]", ids: "i32[B, L]") -> "f32[B, D]":
    # Mean-pooled bag of embeddings (a recommender's sparse features).
    return table[ids].mean(axis=1)
