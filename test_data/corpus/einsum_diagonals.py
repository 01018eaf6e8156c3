import numpy as np

B = 4
N = 12


def einsum_diagonals(a: "f32[B, N, N]", m: "f32[N, N]", v: "f32[N]"):
    # einsum with a label repeated in an operand: per-batch diagonals and traces, a diagonal
    # matrix applied without forming it, and the trace of a product.
    diag = np.einsum("bii->bi", a)
    traces = np.einsum("bii->b", a)
    tr = np.einsum("ii", m)
    scaled = np.einsum("ii,i->i", m, v)
    tr_prod = np.einsum("bij,bji->b", a, a)
    return diag, traces, tr, scaled, tr_prod
