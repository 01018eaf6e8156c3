import numpy as np


def sorted_by_key(keys: "f32[4, 8]", values: "f32[4, 8]"):
    # Values reordered by their keys: a gather by a computed index, which a spec cannot do yet.
    order = np.argsort(keys, axis=1)
    return np.take_along_axis(values, order, axis=1)
