"""examples/explore_run.py runs on a run written by the apps and writes its outputs."""
import subprocess
import sys

from conftest import SOURCE


def test_explore_run(trained_run, network, tmp_path):
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, str(SOURCE / "examples" / "explore_run.py"), "--model-dir", str(trained_run),
                             "--network", network, "--out", str(out), "--num", "100"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "steps with checkpoints [2, 4]" in result.stdout
    assert (out / "interpolation.png").read_bytes()[:4] == b"\x89PNG"
    assert "FID against 100 test images:" in result.stdout
    has_matplotlib = subprocess.run([sys.executable, "-c", "import matplotlib"]).returncode == 0
    assert (out / "curves.png").exists() == has_matplotlib
