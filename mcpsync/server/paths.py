"""``safe_join``: a matched template value as a file path under a root, never outside it.

A resource template such as ``files://{+path}`` hands its read function a relative path;
the natural ``os.path.join(ROOT, path)`` is only safe if nothing in ``path`` can climb out.
Template matching already refuses absolute paths, drives and ``..`` segments; this helper
checks the same again (the value may come from elsewhere: a tool argument, a prompt) and
then resolves symbolic links, so a link inside the root that points outside it is refused
too.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ResourceNotFoundError
from ..protocol.uritemplate import is_relative_path


class UnsafePathError(ResourceNotFoundError):
    """The path would lead outside its root. A :class:`~mcpsync.ResourceNotFoundError`, so
    a resource read function that lets it escape answers "not found" without saying more."""


def safe_join(root: str | os.PathLike[str], *parts: str) -> Path:
    """``root`` joined with ``parts``, resolved (symbolic links followed), or
    :class:`UnsafePathError` when the result would not be ``root`` or below it.

    Each part must be a relative path: no leading ``/`` or ``\\``, no drive (``C:``), no
    ``..`` segment, no NUL. The file need not exist. Checking and opening are two steps, so
    a root that untrusted parties can change (create links in) while you serve is beyond
    what this can guard.
    """
    base = os.path.realpath(os.fspath(root))
    for part in parts:
        if not isinstance(part, str):
            raise TypeError(f"path parts must be str, not {type(part).__name__}")
        if not is_relative_path(part) or os.path.isabs(part):
            raise UnsafePathError("Resource not found: the path is not below the root")
    joined = os.path.realpath(os.path.join(base, *parts))
    if joined != base and os.path.commonpath([base, joined]) != base:
        raise UnsafePathError("Resource not found: the path leads outside the root")
    return Path(joined)
