import numpy as np

B = 3
N = 24
D = 16


def diagonals(x: "f32[B, N, D]", s: "f32[N, N]", g: "f32[N]"):
    # The diagonal of a similarity matrix (each item with itself), a Gram matrix's trace
    # per batch, the first superdiagonal, rows scaled by diag(g), and a trace in float64.
    gram = x @ np.swapaxes(x, 1, 2)
    self_sim = np.diagonal(gram, axis1=1, axis2=2)
    energy = np.trace(gram, axis1=1, axis2=2)
    upper = s.diagonal(offset=1)
    lower = np.diag(s, k=-2)
    scaled = np.diag(g) @ s
    shifted = np.diag(g[:4], 2)
    total = s.trace(dtype=np.float64)
    return self_sim, energy, upper, lower, scaled, shifted, total
