import numpy as np

B = 2
H = 12
W = 9

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def image_normalize_u8(img: "u8[B, H, W, 3]") -> "f32[B, 3, H, W]":
    # An image pipeline's input: uint8 pixels scaled to [0, 1], normalized per channel with
    # ImageNet's statistics, channels first.
    x = img / 255.0
    x = (x - np.array(MEAN)) / np.array(STD)
    return x.transpose(0, 3, 1, 2).astype(np.float32)
