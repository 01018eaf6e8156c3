import numpy as np

N = 12
D = 16


def contrastive_loss(z: "f32[2 * N, D]", tau: "f32[]") -> "f32[2 * N]":
    # NT-Xent (SimCLR): cosine similarities, the diagonal masked out with np.eye, each row's
    # positive the other view of its sample (N rows away).
    z = z / np.linalg.norm(z, axis=1, keepdims=True)
    sim = z @ z.T / tau
    sim = np.where(np.eye(2 * N, dtype=bool), -np.inf, sim)
    positive = np.logical_or(np.eye(2 * N, k=N), np.eye(2 * N, k=-N))
    m = sim.max(axis=1, keepdims=True)
    lse = np.log(np.exp(sim - m).sum(axis=1)) + m[:, 0]
    return lse - np.where(positive, sim, 0.0).sum(axis=1)
