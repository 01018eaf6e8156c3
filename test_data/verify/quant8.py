import numpy as np


def quant8(img: "u8[8, 32]", x: "f32[8, 32]"):
    # uint8 pixels to [0, 1], and floats quantized to int8 (ties to even, clipped).
    return img.astype(np.float32) / 255.0, np.clip(np.round(x * 10.0), -127, 127).astype(np.int8)
