#!/usr/bin/env python3
"""Golden values of density/coverage and intra-class FID (metrics/density_coverage.h,
metrics/intra_class_fid.h), from NumPy alone.

Reads the committed feature arrays tests/golden/data/density_coverage_{real,fake}.npy (150 x 6 and
120 x 6 float32, 8 kB in all) and density_coverage_real_labels.npy (150 int64 labels in [0, 3)),
and writes tests/golden/data/density_coverage.json, checked by test_golden_density_coverage.cpp
(label golden). The generated set's labels are not stored: they are Gantry's rule for generated
sets, example i gets label i % classes (metrics/generated_features.h). Run from the repository
root with Debian's python3-numpy:

    /usr/bin/python3 tests/golden/make_density_coverage_golden.py [--new-features]

--new-features first rewrites the arrays from a fixed seed (three classes with their own means
and covariances; the fakes shifted, scaled and mixed against them, so that density, coverage and
every class's FID are far from their trivial values).

Density and coverage follow the authors' reference code (clovaai/generative-evaluation-prdc,
prdc.py): Euclidean distances, the k-th nearest neighbour radius of each real feature within
the reals (np.partition(d, k)[k], the feature itself being index 0), and strict comparisons
d < radius. The script checks that no fake-to-real distance lies within 1e-9 (relative) of a
radius, so the counts do not depend on how either side rounds its distances, and the C++ test
compares them exactly.

Intra-class FID: the FID (pytorch-fid's formula, unbiased covariances) of each class, fakes of
label c against reals of label c, and the mean over the classes. SciPy is not installed here, so
tr(sqrtm(S1 S2)) is the sum of the square roots of the eigenvalues of S1 S2 (real and
non-negative: S1 S2 is similar to the symmetric positive semi-definite S1^1/2 S2 S1^1/2), taken
with numpy.linalg.eigvals; the script checks it against the symmetric route (sqrt(S1) from
numpy.linalg.eigh, then the eigenvalues of sqrt(S1) S2 sqrt(S1), TF-GAN's trace_sqrt_product) to
1e-9.
"""
import json
import os
import sys

import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
REAL, REAL_LABELS, FAKE = (os.path.join(HERE, f"density_coverage_{n}.npy") for n in ("real", "real_labels", "fake"))
CLASSES = 3
KS = (5, 3)  # 5: the paper's (and Gantry's) default; 3: precision/recall's k


def write_features():
    rng = np.random.default_rng(20200712)
    n, m, d = 150, 120, 6
    means = rng.normal(0.0, 2.0, size=(CLASSES, d))
    mixes = [np.eye(d) + 0.4 * rng.normal(size=(d, d)) for _ in range(CLASSES)]
    real_labels = rng.integers(0, CLASSES, size=n).astype(np.int64)
    real = np.stack([means[c] + rng.normal(size=d) @ mixes[c] for c in real_labels])
    # Fakes of label i % CLASSES: class 0 close to its reals, class 1 shifted, class 2 shrunk.
    shift = np.array([[0.2] * d, [1.5] + [0.0] * (d - 1), [0.0] * d])
    scale = np.array([1.0, 1.1, 0.5])
    fake = np.stack([means[i % CLASSES] + shift[i % CLASSES] + scale[i % CLASSES] * (rng.normal(size=d) @ mixes[i % CLASSES])
                     for i in range(m)])
    np.save(REAL, real.astype(np.float32))
    np.save(REAL_LABELS, real_labels)
    np.save(FAKE, fake.astype(np.float32))


def pairwise(x, y):
    return np.sqrt(((x[:, None, :] - y[None, :, :]) ** 2).sum(axis=2))


def density_coverage(real, fake, k, check_ties=True):  # prdc.compute_prdc's density and coverage
    radii = np.partition(pairwise(real, real), k, axis=1)[:, k]
    d = pairwise(real, fake)  # (N, M)
    gap = np.abs(d - radii[:, None]) / radii[:, None]
    assert not check_ties or gap.min() > 1e-9, \
        f"k = {k}: a fake lies {gap.min():.3g} (relative) from a radius; pick other features"
    density = (1.0 / k) * (d < radii[:, None]).sum(axis=0).mean()
    coverage = (d.min(axis=1) < radii).mean()
    return float(density), float(coverage)


def trace_sqrt_eigvals(s1, s2):
    w = np.linalg.eigvals(s1 @ s2)
    assert np.abs(w.imag).max() <= 1e-9 * np.abs(w.real).max(), "S1 S2 has complex eigenvalues"
    return float(np.sqrt(np.clip(w.real, 0, None)).sum())


def trace_sqrt_symmetric(s1, s2):
    w, v = np.linalg.eigh(s1)
    root = (v * np.sqrt(np.clip(w, 0, None))) @ v.T
    return float(np.sqrt(np.clip(np.linalg.eigvalsh(root @ s2 @ root), 0, None)).sum())


def fid(x, y):
    mu1, mu2 = x.mean(axis=0), y.mean(axis=0)
    s1, s2 = np.cov(x, rowvar=False), np.cov(y, rowvar=False)
    t = trace_sqrt_eigvals(s1, s2)
    assert abs(t - trace_sqrt_symmetric(s1, s2)) <= 1e-9 * max(1.0, t), "the two trace square roots disagree"
    diff = mu1 - mu2
    return float(diff @ diff + np.trace(s1) + np.trace(s2) - 2 * t)


def main():
    if "--new-features" in sys.argv[1:]:
        write_features()
    real = np.load(REAL).astype(np.float64)
    real_labels = np.load(REAL_LABELS)
    fake = np.load(FAKE).astype(np.float64)
    fake_labels = np.arange(fake.shape[0]) % CLASSES
    out = {"arrays": {"real": os.path.basename(REAL), "real_labels": os.path.basename(REAL_LABELS),
                      "fake": os.path.basename(FAKE), "classes": CLASSES,
                      "fake_labels": "i % classes"}}
    for k in KS:
        density, coverage = density_coverage(real, fake, k)
        out[f"density_k{k}"] = density
        out[f"coverage_k{k}"] = coverage
    # The real set against itself: every k-th neighbour lies exactly on a radius (a tie by
    # construction, identical on both sides when d(a, b) and d(b, a) are the same bits), so each
    # open ball holds k copies: density 1, coverage 1.
    out["density_real_real_k5"], out["coverage_real_real_k5"] = density_coverage(real, real, 5, check_ties=False)
    per_class = [fid(real[real_labels == c], fake[fake_labels == c]) for c in range(CLASSES)]
    out["class_counts_real"] = [int((real_labels == c).sum()) for c in range(CLASSES)]
    out["class_counts_fake"] = [int((fake_labels == c).sum()) for c in range(CLASSES)]
    out["intra_fid_per_class"] = per_class
    out["intra_fid"] = float(np.mean(per_class))
    out["fid_all"] = fid(real, fake)
    with open(os.path.join(HERE, "density_coverage.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
