import numpy as np

N = 256
D = 8


def polar_angles(xy: "f32[N, 2]", a: "f32[N, D]", b: "f32[N, D]"):
    # Headings of 2-D vectors in degrees, the angle between embeddings by arccos of their
    # cosine similarity (clipped into its domain), and an arcsin-warped feature.
    heading = np.degrees(np.arctan2(xy[:, 1], xy[:, 0]))
    cos_sim = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1) + 1e-8)
    angle = np.arccos(np.clip(cos_sim, -1.0, 1.0))
    warped = np.arcsin(np.tanh(a)) + np.arctan(b * 2.0) + np.radians(heading)[:, None]
    return heading, angle, warped
