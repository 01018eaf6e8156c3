import numpy as np

H, W = 48, 40
KH, KW = 3, 5


def conv2d_valid(img: "f32[H, W]", kernel: "f32[KH, KW]") -> "f32[H - KH + 1, W - KW + 1]":
    # A valid 2-D correlation written as the textbook double loop over the taps.
    out = np.zeros((H - KH + 1, W - KW + 1), dtype=np.float32)
    for i in range(KH):
        for j in range(KW):
            out += kernel[i, j] * img[i:i + H - KH + 1, j:j + W - KW + 1]
    return out
