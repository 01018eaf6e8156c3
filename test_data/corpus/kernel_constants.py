import numpy as np

B = 3
D = 8


def kernel_constants(x: "f32[B, D]", w: "f32[D, D]", eps=1e-5, alpha=0.5):
    n, d = x.shape
    h = np.einsum("bd,de->be", x, w, optimize=True)
    rms = np.sqrt((h * h).mean(axis=-1, keepdims=True) + eps)
    k = max(1, d // 4)
    return alpha * h / rms + x[:, :k].sum(-1, keepdims=True) * min(n, 2.5)
