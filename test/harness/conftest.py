"""Makes the repository root importable, so the tests can say
`from bench.harness import ...` whether or not PYTHONPATH is set."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
