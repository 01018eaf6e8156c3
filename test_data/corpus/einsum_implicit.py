import numpy as np


def einsum_implicit(a: "f32[3, 4]", b: "f32[4, 5]", v: "f32[4]"):
    mm = np.einsum("ij,jk", a, b)
    tr = np.einsum("ji", a)
    dot = np.einsum("i,i", v, v)
    mv = np.einsum("ij,j", a, v)
    return mm, tr, dot, mv
