import numpy as np

J = 17
H = 24
W = 32


def heatmap_peaks(heatmaps: "f32[J, H, W]", background: "f32[H, W]"):
    # Keypoints: each joint's peak as a flat index over its map, and the column of the brightest
    # row entry of the background (numpy's argmax over an axis other than the last).
    flat = (heatmaps - background).reshape(J, H * W)
    return np.argmax(flat, axis=1), np.argmax(background, axis=0), np.argmin(background)
