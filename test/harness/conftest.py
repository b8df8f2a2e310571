"""Makes the repository root importable, so the tests can say
`from bench.harness import ...` whether or not PYTHONPATH is set."""
import sys
from pathlib import Path

ROOT = str(Path(__file__).absolute().parents[2])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
