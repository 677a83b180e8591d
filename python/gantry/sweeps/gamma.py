"""`gan_sweep --gamma`: R1's γ around StyleGAN2-ADA's heuristic γ = 0.0002 · resolution² / batch
(its `--gamma` default, "auto"), over ×1/F … ×F (F = 16 by default): log-uniform, or with the grid
sampler the powers of two in between (×1/16, ×1/8, …, ×16: 9 values)."""
from __future__ import annotations

import math

from .settings import SettingsError


def gamma_heuristic(resolution: int, batch: int) -> float:
    return 0.0002 * resolution ** 2 / batch


def gamma_space(base_config: dict, resolved: dict, source: str, factor: int = 16, grid: bool = False) -> dict:
    """The space over the γ of the base config's r1 penalty (loss.penalties[i] with type r1)."""
    penalties = base_config.get("loss", {}).get("penalties", [])
    r1 = [i for i, p in enumerate(penalties) if isinstance(p, dict) and p.get("type") == "r1"]
    if len(r1) != 1:
        types = [p.get("type", "?") if isinstance(p, dict) else p for p in penalties]
        raise SettingsError(f"--gamma: expected one r1 penalty in {source}'s loss.penalties, found "
                            f"{len(r1)} among {types} (add {{\"type\": \"r1\", \"gamma\": 1}})")
    if not (factor >= 2 and math.log2(factor).is_integer()):
        raise SettingsError(f"--gamma-factor: expected a power of two >= 2, found {factor}")
    resolution = int(resolved["data"]["image_shape"][-1])
    batch = int(resolved["train"]["global_batch_size"])
    center = gamma_heuristic(resolution, batch)
    key = f"loss.penalties[{r1[0]}].gamma"
    if grid:
        k = int(math.log2(factor))
        return {key: {"grid": [center * 2.0 ** e for e in range(-k, k + 1)]}}
    return {key: {"log_uniform": [center / factor, center * factor]}}
