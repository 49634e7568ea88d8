#!/usr/bin/env python3
"""Fits the polynomial pf__erfcx_poly in parallelformers.c (the vector GELU with erf).

Run as `python3 test/make_erfcx_poly.py` (numpy and scipy); it prints the 12 coefficients, highest
power first, as the C table holds them, and the fit's largest relative error.

erfcx(z) = erfc(z) e^(z^2) is smooth and bounded on z >= 0 (1 at 0, about 1 / (z sqrt(pi)) far
out), so in t = 1 / (1 + z / 2), which maps [0, inf) onto (0, 1], a degree-11 polynomial holds it
to 5e-9 relative over 0 <= z <= 9.4 (past z^2 = 87, e^(-z^2) is below fp32's normal range and the
kernel gives erfc = 0). The fit is least squares in relative error on Chebyshev nodes of t,
reweighted towards its largest errors a few times (close to minimax).
"""

import numpy as np
from scipy.special import erfcx

Z_MAX, P, DEGREE = 9.4, 0.5, 11


def main() -> None:
    t_min, n = 1 / (1 + P * Z_MAX), 4000
    t = (t_min + 1) / 2 + (1 - t_min) / 2 * np.cos(np.pi * (np.arange(n) + 0.5) / n)
    f = erfcx((1 / t - 1) / P)
    basis = np.vander(t, DEGREE + 1, increasing=True)
    weight = 1 / f
    c, *_ = np.linalg.lstsq(basis * weight[:, None], f * weight, rcond=None)
    for _ in range(30):
        error = np.abs(basis @ c - f) / f
        w = weight * (1 + 50 * error / error.max())
        c, *_ = np.linalg.lstsq(basis * w[:, None], f * w, rcond=None)
    z = np.linspace(0, Z_MAX, 200001)
    worst = np.abs(np.polyval(c[::-1], 1 / (1 + P * z)) / erfcx(z) - 1).max()
    print(", ".join(f"{np.float32(v):.9e}f" for v in c[::-1]))
    print(f"largest relative error {worst:.2e}")


if __name__ == "__main__":
    main()
