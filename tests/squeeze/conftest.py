"""The squeeze tests import their kit, and the scripted chat server of the model tests, by name."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "model"))
