import numpy as np


def relu(x: "f32[8]"):
    if x > 0:
        return x
    return 0 * x
