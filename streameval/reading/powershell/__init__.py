"""PowerShell commands, parsed for reading and never executed.

Codex on Windows runs its ``shell_command`` in PowerShell, and any agent may call
``powershell -Command ...``: such a command is read here (``read.analyze_powershell``)
instead of by the POSIX shell reader, which would take ``Get-Content x`` for an unknown
program. ``powershell_script`` says whether a call's command is PowerShell, and gives
its script.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from streameval.reading.powershell.read import analyze_powershell

__all__ = ["powershell_script", "analyze_powershell"]

_HOSTS = re.compile(r"(?:^|[\\/])(?:powershell|pwsh)(?:\.exe)?$", re.IGNORECASE)
_COMMAND_FLAG = re.compile(r"^-(?:c|command)$", re.IGNORECASE)
#: a cmdlet's name: an approved verb, a dash, a noun (``Get-Content``, ``Select-String``)
_CMDLET = re.compile(r"^(?:Get|Set|Select|Where|ForEach|Sort|Measure|Test|Write|Out|New|"
                     r"Remove|Copy|Move|Rename|Add|Format|Invoke|Start|Stop|Join|Split|"
                     r"Resolve|Push|Pop|Import|Export|Convert|ConvertTo|ConvertFrom)-[A-Za-z]+$",
                     re.IGNORECASE)
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def _host_script(argv: list[str]) -> str | None:
    """The script of ``powershell [-NoProfile ...] -Command X`` (argv), else None."""
    if not argv or not _HOSTS.search(argv[0].strip('"\'')):
        return None
    for i, word in enumerate(argv[1:], 1):
        if _COMMAND_FLAG.match(word):
            rest = argv[i + 1:]
            return " ".join(rest) if len(rest) != 1 else rest[0]
    return None


def powershell_script(command: Any, cwd: str | None, tool: str = "") -> str | None:
    """The PowerShell script a call ran, or None when it is no PowerShell: an explicit
    ``powershell``/``pwsh -Command`` (argv or one string), a command run in a Windows
    working directory by a tool that is no bash (Codex on Windows: PowerShell is the
    shell; Claude Code's ``Bash`` is Git Bash there), or a command that starts with a
    cmdlet."""
    if isinstance(command, list) and command and all(isinstance(x, str) for x in command):
        script = _host_script(command)
        if script is not None:
            return script
        command = " ".join(command)
    if not isinstance(command, str) or not command.strip():
        return None
    text = command.strip()
    head = text.split(None, 1)[0].strip('"\'`')
    if _HOSTS.search(head):
        try:
            script = _host_script(shlex.split(text))
        except ValueError:
            script = None
        if script is not None:
            return script
    if cwd and _DRIVE.match(cwd) and "bash" not in tool.lower():
        return text
    first = text.lstrip("$").split(None, 1)[0]
    if _CMDLET.match(first) or first.lower() in ("gc", "gci", "sls"):
        return text
    return None
