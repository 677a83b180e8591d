"""gan_sweep --gamma: R1's γ around StyleGAN2-ADA's heuristic 0.0002 · resolution² / batch
(32² / 16 here: 0.0128), over ×1/16 … ×16 — log-uniform (here in a SQLite storage), or the powers
of two with the grid sampler; a config without one r1 penalty is refused."""
import json

import gantry

from sweep_helpers import gan_sweep, sweep_base, write_json

HEURISTIC = 0.0002 * 32 ** 2 / 16


def r1_config(tmp_path, network, penalties):
    base = sweep_base(network)
    base["discriminator"]["norm"] = "none"
    base["loss"] = {"penalties": penalties}
    return write_json(tmp_path / "base.json", base)


def test_gamma_space_around_the_heuristic(workdir, network, tmp_path):
    config = r1_config(tmp_path, network, [{"type": "wgan_gp", "weight": 1}, {"type": "r1", "gamma": 1}])
    r = gan_sweep("--gamma", "--dir", str(tmp_path / "grid"), "--config", str(config), "--sampler", "grid",
                  "--pruner", "none", "--trials", "2", "--kimg", "0.016", "--min-kimg", "0.016", "--threads", "1")
    assert r.returncode == 0, r.stderr
    settings = json.loads((tmp_path / "grid" / "sweep.json").read_text())
    values = settings["space"]["loss.penalties[1].gamma"]["grid"]
    assert values == [HEURISTIC * 2.0 ** k for k in range(-4, 5)]
    study = gantry.sweep(tmp_path / "grid")
    assert all(t.params["loss.penalties[1].gamma"] in values for t in study.get_trials())
    assert len({t.params["loss.penalties[1].gamma"] for t in study.get_trials()}) == 2
    r = gan_sweep("--gamma", "--dir", str(tmp_path / "tpe"), "--config", str(config), "--trials", "1", "--kimg", "0.016",
                  "--min-kimg", "0.016", "--threads", "1", "--storage", "sqlite")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "tpe" / "study.db").exists() and not (tmp_path / "tpe" / "study.journal").exists()
    assert [t.state.name for t in gantry.sweep(tmp_path / "tpe").get_trials()] == ["COMPLETE"]
    space = json.loads((tmp_path / "tpe" / "sweep.json").read_text())["space"]
    assert space == {"loss.penalties[1].gamma": {"log_uniform": [HEURISTIC / 16, HEURISTIC * 16]}}


def test_gamma_needs_one_r1_penalty(workdir, network, tmp_path):
    config = r1_config(tmp_path, network, [])
    r = gan_sweep("--gamma", "--dir", str(tmp_path / "s"), "--config", str(config), "--kimg", "0.016")
    assert r.returncode == 2
    assert "--gamma: expected one r1 penalty in " in r.stderr and "found 0 among []" in r.stderr, r.stderr
