import numpy as np

T = 128
C = 32
K = 4


def token_shift_mix(x: "f32[T, C]", p: "f32[T, K]", mix: "f32[C]"):
    # RWKV-style token shift (the previous row, zeros first) by np.roll; a product of K
    # probabilities per row; how many channels fire; a Hann window by np.linspace.
    prev = np.roll(x, 1, axis=0)
    prev[0] = 0.0
    shifted = x * mix + prev * (1.0 - mix)
    joint = np.prod(1.0 / (1.0 + np.exp(-p)), axis=-1, keepdims=True)
    fired = np.count_nonzero(x > 0.5, axis=1)
    window = 0.5 - 0.5 * np.cos(2.0 * np.pi * np.linspace(0.0, 1.0, C))
    eps = np.finfo(np.float32).eps
    return shifted * window + joint, fired, np.log(joint + eps)
