import numpy as np

S = 32
H = 4
HD = 16


def apply_rotary(x: "f32[S, H, HD]", cos: "f32[S, HD]", sin: "f32[S, HD]"):
    # GPT-NeoX's rotate_half written into a preallocated array.
    half = x.shape[-1] // 2
    rotated = np.empty_like(x)
    rotated[..., :half] = -x[..., half:]
    rotated[..., half:] = x[..., :half]
    return x * cos[:, None, :] + rotated * sin[:, None, :]
