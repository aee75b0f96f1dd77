"""3-server ensemble with one server killed: no leadership change (the
same scenario as zk_restart_test.py, killing server 1 instead)."""

import os
import sys
import unittest

os.environ["KILL_ONE"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zk_restart_test import ZkOutage  # noqa: E402,F401

if __name__ == "__main__":
    unittest.main(verbosity=2)
