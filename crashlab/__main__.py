"""`python -m crashlab`: the same command line as the `crashlab` script."""

from crashlab.cli import main

main()
