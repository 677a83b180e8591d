"""Sample-quality metrics on arrays or folders, as gan_eval --real A --fake B computes them.

real, fake: float32 arrays (N, C, H, W) in [-1, 1], or paths (.npy files or image folders).
network: a feature network description file (e.g. gan_classifier's classifier.json).
"""
from __future__ import annotations

import os
from typing import Union

import numpy as np

from . import _gantry

Images = Union[np.ndarray, str, "os.PathLike[str]"]


def _images(x):
    return x if isinstance(x, (str, os.PathLike)) else np.asarray(x, dtype=np.float32)


def compare(real: Images, fake: Images, network: Union[str, "os.PathLike[str]"], metrics: str = "fid,kid,pr",
            num: int = 0, num_real: int = 0, batch: int = 250, kid_subsets: int = 100,
            kid_subset_size: int = 1000, dc_k: int = 5) -> dict:
    """Every metric in `metrics` ("fid", "kid", "pr", "dc", "is", comma-separated) in one pass: gan_eval's
    JSON row (fid, kid, kid_std, precision, recall, density, coverage, is_mean, is_std, num_fake, num_real,
    seconds).
    num / num_real: at most that many fake / real images (0: all); dc_k: density/coverage's k."""
    return _gantry.compare_image_sets(None if real is None else _images(real), _images(fake), os.fspath(network),
                                      metrics, num, num_real, batch, kid_subsets, kid_subset_size, dc_k)


def fid(real: Images, fake: Images, network, **kwargs) -> float:
    """Fréchet distance between the feature distributions of `real` and `fake`."""
    return compare(real, fake, network, "fid", **kwargs)["fid"]


def kid(real: Images, fake: Images, network, **kwargs) -> float:
    """Kernel inception distance (unbiased MMD², mean over subsets)."""
    return compare(real, fake, network, "kid", **kwargs)["kid"]


def precision_recall(real: Images, fake: Images, network, **kwargs) -> tuple[float, float]:
    """Improved precision and recall (k-NN manifolds of the features)."""
    row = compare(real, fake, network, "pr", **kwargs)
    return row["precision"], row["recall"]


def density_coverage(real: Images, fake: Images, network, **kwargs) -> tuple[float, float]:
    """Density and coverage (Naeem et al. 2020; dc_k = 5 nearest neighbours of the real features)."""
    row = compare(real, fake, network, "dc", **kwargs)
    return row["density"], row["coverage"]


def inception_score(fake: Images, network, **kwargs) -> tuple[float, float]:
    """Inception score of `fake` with the network's class logits: (mean, std over splits)."""
    row = compare(None, fake, network, "is", **kwargs)
    return row["is_mean"], row["is_std"]
