import numpy as np

# bench/suite/mla_decode_small_batch.py written in flash-decoding form by hand: the sequence in
# 32 chunks of 256, each chunk's scores, maximum, exponentials, sum and p @ V, then the chunks
# merged by exp(m_c - M) (bench/RESULTS.md).

B = 2
H = 16
T = 8192
C = 32
TC = 256


def mla_decode(q: "f32[B, H, 576]", kv: "f32[B, T, 576]") -> "f32[B, H, 512]":
    kc = kv.reshape(B, C, TC, 576)
    s = np.einsum("bhd,bctd->bcht", q, kc) / np.sqrt(192.0)
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)
    l = e.sum(axis=-1)
    o = np.einsum("bcht,bctd->bchd", e, kc[:, :, :, :512])
    mm = m[:, :, :, 0]
    big = mm.max(axis=1, keepdims=True)
    w = np.exp(mm - big)
    num = np.einsum("bch,bchd->bhd", w, o)
    den = (w * l).sum(axis=1)[:, :, None]
    return num / den
