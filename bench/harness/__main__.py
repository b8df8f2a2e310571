"""Entry point: python3 -m bench.harness (see cli.py)."""
import sys

from .cli import main

sys.exit(main())
