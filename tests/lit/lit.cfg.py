"""lit configuration for asterism's IR and assembly FileCheck tests (run: lit tests/lit)."""

import os
import shlex
import sys
import tempfile

import lit.formats

config.name = "asterism"  # noqa: F821 - `config` is provided by lit
config.test_format = lit.formats.ShTest(execute_external=False)  # noqa: F821
config.suffixes = [".mlir"]  # noqa: F821
config.test_source_root = os.path.dirname(__file__)  # noqa: F821
config.excludes = ["Inputs"]  # noqa: F821
# Outputs (and lit's timing file) go outside the source tree.
config.test_exec_root = os.path.join(tempfile.gettempdir(), "asterism-lit")  # noqa: F821

python = shlex.quote(sys.executable)
repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
config.substitutions.append(("%asterism-ir", f"{python} -m asterism.ir"))  # noqa: F821
config.substitutions.append(("%python", python))  # noqa: F821
config.substitutions.append(("%repo", repo))  # noqa: F821
# The test processes import the package from this checkout even without an install.
config.environment["PYTHONPATH"] = os.pathsep.join(  # noqa: F821
    [os.path.join(repo, "src"), os.environ.get("PYTHONPATH", "")])
