import numpy as np


def helper(x):
    return x + 1
