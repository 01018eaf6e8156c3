import numpy as np

B = 16
D = 64
LAYERS = 3
RESIDUAL = True
silu = lambda z: z / (1.0 + np.exp(-z))


def layer_norm(h, eps=1e-5):
    mu = h.mean(axis=-1, keepdims=True)
    var = ((h - mu) ** 2).mean(axis=-1, keepdims=True)
    return (h - mu) / np.sqrt(var + eps)


def mlp_stack(x: "f32[B, D]", w: "f32[LAYERS, D, D]", b: "f32[LAYERS, D]") -> "f32[B, D]":
    # A stack of residual blocks written as a Python loop over the layers, the way a model's
    # forward pass is written; the last block skips the activation.
    h = x
    hidden = []
    for i in range(LAYERS):
        z = layer_norm(h) @ w[i] + b[i]
        z = silu(z) if i < LAYERS - 1 else z
        h = h + z if RESIDUAL else z
        hidden.append(h)
    return sum(hidden) / len(hidden)
