# mla.decode's varlen cache lengths exactly as TileLab draws them (kernels/mla/mla_decode.cpp, make_paged_cache:
# Box-Muller from two counter-based uniforms of (seed, request), numeric.hpp's splitmix64 hash), so a baseline timed in
# Python (flashmla_dense.py, LENGTHS=tilelab) runs on the very lengths mla.decode ran on, not on another draw of the
# same distribution: at batch 32 two draws differ by several percent in their longest request and their total.
import math

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def hash64(seed, index):
    return mix64((mix64((seed + GOLDEN) & M64) + index * GOLDEN) & M64)


def uniform01(seed, index):
    return (hash64(seed, index) >> 40) * (1.0 / 16777216.0)


def tilelab_lengths(b, s_k, min_len, zeros=False):
    """Request i's cached tokens: max(s_k + z s_k / 2, min_len) truncated (z standard normal), half of them 0 with
    zeros (mla.decode's zero_lengths), capped at 2^24."""
    out = []
    for i in range(b):
        u1 = max(uniform01(0x31A0, i), 1e-9)
        u2 = uniform01(0x31A1, i)
        z = math.sqrt(-2.0 * math.log(u1)) * math.cos(6.283185307179586 * u2)
        n = int(max(float(s_k) + z * float(s_k) / 2.0, float(min_len)))
        if zeros and uniform01(0x31A2, i) < 0.5:
            n = 0
        out.append(min(n, 1 << 24))
    return out


if __name__ == "__main__":
    lens = tilelab_lengths(32, 32768, 1)
    print(lens[:4], sum(lens), max(lens))
