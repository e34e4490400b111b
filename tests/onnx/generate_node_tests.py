#!/usr/bin/python3
"""Generates ONNX's backend node tests (model.onnx + test_data_set_*/) into OUT_DIR/node.

Debian's python3-onnx (1.12) calls np.float, np.int, np.bool ... which numpy 1.24 removed; restore the
aliases, then run onnx.backend.test.cmd_tools generate-data.

    generate_node_tests.py OUT_DIR
"""
import shutil
import sys
import warnings

import numpy as np

warnings.filterwarnings("ignore")
for _name, _value in (("float", float), ("int", int), ("bool", bool), ("object", object), ("str", str),
                      ("complex", complex)):
    setattr(np, _name, _value)

from onnx.backend.test import cmd_tools  # noqa: E402  (needs the aliases above)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: generate_node_tests.py OUT_DIR")
    out = sys.argv[1]
    shutil.rmtree(out, ignore_errors=True)  # no stale tests from another ONNX version
    sys.argv = [sys.argv[0], "generate-data", "-o", out]
    cmd_tools.main()


if __name__ == "__main__":
    main()
