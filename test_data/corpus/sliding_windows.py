import numpy as np
from numpy.lib.stride_tricks import sliding_window_view as windows

B, C, L, O, K = 2, 3, 16, 4, 3
H, W = 9, 8
# A padded convolution keeps the length; a stride-2 pool of a padded 9×8 image.
P = 1
Ho = (H + 2 * P - 3) // 2 + 1
Wo = (W + 2 * P - 3) // 2 + 1
# A dilated window: 3 taps 2 apart span 5 positions.
D = 2
Ld = L - D * (K - 1)


def sliding_windows(x: "f32[B, C, L]", w: "f32[O, C, K]", img: "f32[B, C, H, W]", taps: "f32[C, K]"):
    # The usual numpy idioms of convolutions and pooling, without loops.
    xp = np.pad(x, ((0, 0), (0, 0), (P, P)))
    conv = np.einsum("bclk,ock->bol", np.lib.stride_tricks.sliding_window_view(xp, (K,), axis=-1), w)
    ip = np.pad(img, ((0, 0), (0, 0), (P, P), (P, P)), constant_values=-np.inf)
    pooled = windows(ip, (3, 3), axis=(2, 3))[:, :, ::2, ::2].max(axis=(-2, -1))
    dilated = windows(x, (D * (K - 1) + 1,), axis=2)[..., ::D]
    depthwise = (dilated * taps[None, :, None, :]).sum(-1)
    mean = windows(img, (1, 1, 2, 3)).mean(axis=(-2, -1))
    return conv, pooled, depthwise, mean
