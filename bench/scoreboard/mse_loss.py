import numpy as np

# Mean squared error of a large prediction, one scalar.
N = 16777216


def mse_loss(pred: "f32[N]", target: "f32[N]") -> "f32[]":
    d = pred - target
    return (d * d).mean()
