"""`python -m asterism.cli ...`: the `asterism` command."""

import sys

from asterism.cli.main import main

sys.exit(main())
