"""python3 -m gantry.sweeps: the gan_sweep command (gantry/sweeps/cli.py)."""
import sys

from .cli import main

sys.exit(main())
