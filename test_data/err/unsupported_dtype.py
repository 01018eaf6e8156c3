import numpy as np


def f(x: "u8[4]"):
    return x
