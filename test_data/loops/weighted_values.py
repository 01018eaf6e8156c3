import numpy as np


# `p / p.sum()` lacks the output's axis d: it is computed once into a buffer, not once per
# column of the product. `2 * x` has every output axis of its einsum: it stays inline.
def weighted_values(p: "f32[3, 5]", v: "f32[5, 4]", x: "f32[3, 5]", w: "f32[5]"):
    scaled = p / p.sum(axis=-1, keepdims=True)
    return scaled @ v, np.einsum("ij,j->i", 2 * x, w)
