"""Turns an agent's native logs into ATIF with Harbor's own converter (this file runs in
Harbor's virtualenv, Python >= 3.12; the test starts it as a subprocess).

    python harbor_atif_driver.py claude-code|codex LOGS_DIR OUT_JSON

LOGS_DIR is laid out as Harbor finds a finished trial's logs: Claude Code's session files
under ``sessions/projects/<slug>/``, Codex's rollouts under ``sessions/YYYY/MM/DD/``.
"""

import sys
from pathlib import Path


def main() -> None:
    agent, logs, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    if agent == "claude-code":
        from harbor.agents.installed.claude_code import ClaudeCode as Agent
    else:
        from harbor.agents.installed.codex import Codex as Agent
    trajectory = Agent(logs_dir=logs).convert_trajectory(logs)
    if trajectory is None:
        raise SystemExit(f"Harbor found no {agent} session under {logs}")
    out.write_text(trajectory.model_dump_json(indent=2, exclude_none=True))


if __name__ == "__main__":
    main()
