import numpy as np


def f(x: "f32[8, 0]"):
    return x.argmax(axis=1)
