"""Pushed traces: runs in remote sandboxes send what they do to the watcher's HTTP
server (Claude Code HTTP hooks, OpenTelemetry logs, raw trace lines), and each becomes
a trace file the watcher follows like any other (``spool``), scored by the same engine.
"""
