import numpy as np


def einsum_many(a: "f32[3, 4]", b: "f32[4, 5]", c: "f32[5, 2]", u: "f32[3]", w: "f32[6]", col: "f32[3, 1]"):
    chain = np.einsum("ij,jk,kl->il", a, b, c)
    outer = np.einsum("i,j->ij", u, w)
    bdot = np.einsum("bi,bi->b", a, a)
    total = np.einsum("ij,jk->", a, b)
    # numpy broadcasts a label's size-1 axes: j is 1 in col and 4 in b.
    stretched = np.einsum("ij,jk->ik", col, b)
    return chain, outer, bdot, total, stretched
