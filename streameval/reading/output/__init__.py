"""One parser per output shape a tool prints: numbered file lines, grep hits, listings.

Each parser turns the text a call printed into what it says about files, and nothing
more: which file is meant, and which lines it showed, is decided by the callers
(``reading.shell``, ``reading.infer``) together with the repository.
"""
