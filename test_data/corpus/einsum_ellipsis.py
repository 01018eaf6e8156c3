import numpy as np


def einsum_ellipsis(a: "f32[2, 3, 4, 5]", b: "f32[3, 5, 6]", c: "f32[1, 4, 5]"):
    mm = np.einsum("...ij,...jk->...ik", a, b)
    rowsum = np.einsum("...i->...", a)
    bc = np.einsum("...ij,...ij->...i", a, c)
    swapped = np.einsum("...ji", a)
    return mm, rowsum, bc, swapped
