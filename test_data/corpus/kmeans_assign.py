import numpy as np

N = 300
K = 16
D = 8


def kmeans_assign(points: "f32[N, D]", centroids: "f32[K, D]"):
    # Each point's nearest centroid, by squared distance, and that distance.
    diff = points[:, None, :] - centroids[None, :, :]
    dist = (diff ** 2).sum(axis=-1)
    return dist.argmin(axis=1), dist.min(axis=1)
