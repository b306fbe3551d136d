"""The notebook client that runs whole lessons (tools/execute_notebooks.py's LessonClient:
nbclient's, with waits for the kernel's messages that cannot be lost), for the tests."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

from execute_notebooks import LessonClient  # noqa: E402

__all__ = ["LessonClient"]
