"""gantry.train: the same run as gan_train (checkpoints bit for bit), callbacks, polite stops,
resume, and errors."""
import json
import os
import signal
import threading

import numpy as np
import pytest

import gantry
from conftest import run_app, tiny_config


def checkpoint_tensors(model_dir, step):
    _, tensors, _ = gantry._gantry.read_checkpoint(str(model_dir / "checkpoints" / f"ckpt-{step}.safetensors"))
    return tensors


def test_train_equals_gan_train(workdir, tmp_path):
    app_dir, py_dir = tmp_path / "app", tmp_path / "py"
    (tmp_path / "c.json").write_text(json.dumps(tiny_config(app_dir)))
    run_app("gan_train", "--config", str(tmp_path / "c.json"))
    seen = []
    result = gantry.train(tiny_config(py_dir), callbacks=[seen.append])
    assert result == {"status": "done", "exit_code": 0, "step": 4}
    assert [r["step"] for r in seen] == [1, 2, 3, 4]
    assert all(np.isfinite(r["discriminator_loss"]) and r["images_per_second"] > 0 for r in seen)
    a, b = checkpoint_tensors(app_dir, 4), checkpoint_tensors(py_dir, 4)
    assert set(a) == set(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    assert (py_dir / "samples" / "step-4.png").exists() and (py_dir / "metrics.jsonl").exists()


def test_callback_stops_politely_and_resume_continues(tmp_path):
    model_dir = tmp_path / "run"
    config = tiny_config(model_dir, steps=6)
    result = gantry.train(config, callbacks=[lambda r: r["step"] == 3])
    assert result["status"] == "stopped" and result["exit_code"] == 75 and result["step"] == 3
    assert gantry.Run(model_dir).steps[-1] == 3  # the step reached was saved
    seen = []
    result = gantry.train(config, resume="must", callbacks=[lambda r: seen.append(r["step"])])
    assert result["status"] == "done" and seen == [4, 5, 6]


def test_keyboard_interrupt_is_a_polite_stop(tmp_path):
    model_dir = tmp_path / "run"
    def interrupt(r):  # Ctrl-C while step 2 trains, as a notebook's interrupt button sends it
        if r["step"] == 1:
            threading.Timer(0.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    result = gantry.train(tiny_config(model_dir, steps=200), callbacks=[interrupt])
    assert result["status"] == "stopped" and result["step"] < 200
    assert gantry.Run(model_dir).steps[-1] == result["step"]


def test_callback_exception_is_raised_after_a_clean_stop(tmp_path):
    def fail(r):
        if r["step"] == 2:
            raise RuntimeError("callback failed at step 2")
    with pytest.raises(RuntimeError, match="callback failed at step 2"):
        gantry.train(tiny_config(tmp_path / "run", steps=6), callbacks=[fail])
    assert gantry.Run(tmp_path / "run").steps[-1] == 2


def test_config_errors_name_the_key(tmp_path):
    bad = tiny_config(tmp_path / "run")
    bad["train"]["stesp"] = 3
    with pytest.raises(gantry.GantryError, match="train.stesp: unknown key"):
        gantry.train(bad)
    with pytest.raises(gantry.GantryError, match="nothing.json: cannot open"):
        gantry.train(tmp_path / "nothing.json")
    with pytest.raises(ValueError, match="resume"):
        gantry.train(bad, resume="sometimes")
    with pytest.raises(gantry.GantryError, match='resume="must": no checkpoint'):
        gantry.train(tiny_config(tmp_path / "fresh"), resume="must")
