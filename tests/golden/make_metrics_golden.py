#!/usr/bin/env python3
"""Golden values of the sample-quality metrics (metrics/), from NumPy/SciPy.

Writes tests/golden/data/metrics.json, checked by test_golden_metrics.cpp (label golden). The
feature sets are not stored: both sides generate them from the integer hash below (mirrored in
tests/golden/metrics_features.h), so the file holds only the results. Run from the repository
root with Debian's python3-numpy and python3-scipy (scripts/setup with GANTRY_SETUP_TORCH=1):

    /usr/bin/python3 tests/golden/make_metrics_golden.py

FID follows pytorch-fid's calculate_frechet_distance (scipy.linalg.sqrtm of S1 S2), KID
StyleGAN2-ADA's compute_kid, precision/recall Kynkäänniemi et al.'s k-NN radii, the Inception
score the original code's split loop.
"""
import json
import os

import numpy as np
import scipy.linalg
import scipy.spatial.distance
import scipy.special

MASK = 0xFFFFFFFF


def hash_unit(i, j, seed):
    """Uniform in [0, 1) from (i, j, seed): a 32-bit integer mix, identical in C++."""
    h = (i * 0x9E3779B1 + j * 0x85EBCA77 + seed * 0xC2B2AE3D + 0x27D4EB2F) & MASK
    h ^= h >> 15
    h = (h * 0x2C1B3C6D) & MASK
    h ^= h >> 12
    h = (h * 0x297A2D39) & MASK
    h ^= h >> 15
    return h / 4294967296.0


def features(n, d, seed, scale, shift):
    """(n, d) float32: correlated neighbouring columns, a per-column offset."""
    out = np.empty((n, d), dtype=np.float64)
    for i in range(n):
        for j in range(d):
            a = hash_unit(i, j, seed) - 0.5
            b = hash_unit(i, (j + 1) % d, seed) - 0.5
            out[i, j] = (a + 0.5 * b) * scale + shift * j / d
    return out.astype(np.float32).astype(np.float64)


def fid(x, y):  # pytorch-fid's calculate_frechet_distance
    mu1, mu2 = x.mean(axis=0), y.mean(axis=0)
    s1, s2 = np.cov(x, rowvar=False), np.cov(y, rowvar=False)
    diff = mu1 - mu2
    covmean, _ = scipy.linalg.sqrtm(s1.dot(s2), disp=False)
    if np.iscomplexobj(covmean):
        covmean = covmean.real
    return float(diff.dot(diff) + np.trace(s1) + np.trace(s2) - 2 * np.trace(covmean))


def kid(real, gen, num_subsets, max_subset_size):  # StyleGAN2-ADA's compute_kid
    n = real.shape[1]
    m = min(min(real.shape[0], gen.shape[0]), max_subset_size)
    t = 0
    rng = np.random.RandomState(0)
    for _ in range(num_subsets):
        x = gen[rng.choice(gen.shape[0], m, replace=False)]
        y = real[rng.choice(real.shape[0], m, replace=False)]
        a = (x @ x.T / n + 1) ** 3 + (y @ y.T / n + 1) ** 3
        b = (x @ y.T / n + 1) ** 3
        t += (a.sum() - np.diag(a).sum()) / (m - 1) - b.sum() * 2 / m
    return float(t / num_subsets / m)


def precision_recall(real, fake, k):
    def radii(x):
        d = scipy.spatial.distance.cdist(x, x)
        return np.partition(d, k, axis=1)[:, k]

    def coverage(query, ref, ref_radii):
        d = scipy.spatial.distance.cdist(query, ref)
        return float(np.mean(np.any(d <= ref_radii[None, :], axis=1)))

    return coverage(fake, real, radii(real)), coverage(real, fake, radii(fake))


def inception_score(logits, splits):
    p = scipy.special.softmax(logits, axis=1)
    n = p.shape[0]
    scores = []
    for s in range(splits):
        part = p[s * n // splits:(s + 1) * n // splits]
        py = part.mean(axis=0, keepdims=True)
        kl = (part * (np.log(part) - np.log(py))).sum(axis=1).mean()
        scores.append(np.exp(kl))
    return float(np.mean(scores)), float(np.std(scores))


def main():
    real = features(300, 16, seed=1, scale=1.0, shift=0.0)
    fake = features(200, 16, seed=2, scale=1.3, shift=0.5)
    logits = features(250, 10, seed=3, scale=8.0, shift=2.0)
    precision, recall = precision_recall(real, fake, k=3)
    is_mean, is_std = inception_score(logits, splits=10)
    out = {
        "features": {"real": [300, 16, 1, 1.0, 0.0], "fake": [200, 16, 2, 1.3, 0.5],
                     "logits": [250, 10, 3, 8.0, 2.0]},
        "fid_real_fake": fid(real, fake),
        "fid_real_real_half": fid(real, real[:150]),
        # m = 200 = both sizes: every subset is the whole set, so the draws do not matter
        "kid_real200_fake": kid(real[:200], fake, num_subsets=3, max_subset_size=1000),
        "precision_k3": precision,
        "recall_k3": recall,
        "is_mean": is_mean,
        "is_std": is_std,
    }
    path = os.path.join(os.path.dirname(__file__), "data", "metrics.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
