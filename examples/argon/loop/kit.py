"""The harness's own builder: copy what an agent sandbox receives into the folder given."""

import shutil
import sys
from pathlib import Path

out = Path(sys.argv[1])
here = Path(__file__).resolve().parent.parent
shutil.copytree(here / "task", out, dirs_exist_ok=True)
