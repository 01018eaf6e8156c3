import numpy as np

T = 16
H = 4
D = 32
P = 128


def rope_positions(x: "f32[T, H, D]", cos_cache: "f32[P, D]", sin_cache: "f32[P, D]", position_ids: "i64[T]") -> "f32[T, H, D]":
    # Rotary embedding with cached tables indexed by explicit positions (a KV-cached decode).
    cos = cos_cache[position_ids][:, None, :]
    sin = sin_cache[position_ids][:, None, :]
    half = D // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rotated * sin
