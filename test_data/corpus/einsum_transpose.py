import numpy as np


def einsum_transpose(x: "f32[3, 4]", y: "f32[2, 3, 4]"):
    a = np.einsum("ij->ji", x)
    b = np.einsum("bij->bji", y)
    c = np.einsum("ijk->kij", y)
    d = np.einsum("bij,jk->bik", y, np.einsum("ij->ji", x))
    return a, b, c, d
