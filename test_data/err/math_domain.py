import math

import numpy as np

SCALE = math.sqrt(1 - 2)


def f(x: "f32[4]"):
    return x * SCALE
