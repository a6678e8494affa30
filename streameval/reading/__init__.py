"""Reading: what one tool call showed the agent and what it changed, in repository terms.

``formats`` turns trace lines into ``ToolCall``s; this package turns a ToolCall into a
``Step``: which repository files and which base-commit lines the agent was shown. The
tool vocabulary (``tools``), the shell parser (``shell``), one parser per output shape
(``output``), the alignment of shown text with the base commit (``align``), the map from
current to base lines (``editmap``), paths and categories each live in a room of their own.
"""
