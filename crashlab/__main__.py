"""`python -m crashlab`: the same command line as the `crashlab` script."""

from .cli import main

main()
