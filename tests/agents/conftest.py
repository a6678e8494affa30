"""The agent tests import their helpers (scenario, scripted model, CLI pins) by name."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
