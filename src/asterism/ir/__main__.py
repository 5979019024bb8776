"""`python -m asterism.ir`: see asterism.ir.tool."""

import sys

from asterism.ir.tool import main

sys.exit(main())
