#!/usr/bin/env python
"""Django's command-line utility for the example project.

    python examples/django_project/manage.py runserver          # 127.0.0.1:8000, MCP at /mcp
    python examples/django_project/manage.py runserver 127.0.0.1:8080 --noreload
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> None:
    # Runnable from anywhere: the project directory holds the notes_site package.
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "notes_site.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
