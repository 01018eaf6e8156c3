import numpy as np


def einsum_many(a: "f32[3, 4]", b: "f32[4, 5]", c: "f32[5, 2]", u: "f32[3]", w: "f32[6]"):
    chain = np.einsum("ij,jk,kl->il", a, b, c)
    outer = np.einsum("i,j->ij", u, w)
    bdot = np.einsum("bi,bi->b", a, a)
    total = np.einsum("ij,jk->", a, b)
    return chain, outer, bdot, total
