import numpy as np

N, C = 16, 20


def mask_logic(x: "f32[N, C]", valid: "bool[N, C]", frozen: "bool[C]"):
    # Boolean masks as inputs: negated, combined, counted and reduced.
    live = valid & ~frozen[None, :]
    count = live.sum(axis=1)
    any_live = np.any(live, axis=1)
    all_live = np.logical_and.reduce(live, axis=1)
    masked = np.where(live, x, 0.0)
    either = np.logical_or(valid, np.logical_not(frozen))
    return masked.sum(axis=1) / np.maximum(count, 1), any_live, all_live, either, live.astype(np.int32).cumsum(axis=1)
