import numpy as np


def scale(x: "f32[4]", unused: "f32[4]"):
    return x * 2
