"""`python -m crashlab.service --dir DIR ...`: the service in a process of its own, as a harness starts it."""

import sys

from crashlab.service.server import main

sys.exit(main())
