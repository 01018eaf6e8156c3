import numpy as np


def f(x: "f32[4; 8]"):
    return x
