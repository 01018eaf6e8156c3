import numpy as np


def f(x: "f32[4]"):
    for _ in range(100_000):
        x = x * 0.5
    return x
