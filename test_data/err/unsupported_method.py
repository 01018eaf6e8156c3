import numpy as np


def best(x: "f32[4, 8]"):
    return x.argmax(axis=-1)
