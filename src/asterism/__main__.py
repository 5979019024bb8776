"""`python -m asterism ...`: the `asterism` command."""

import sys

from asterism.cli import main

sys.exit(main())
