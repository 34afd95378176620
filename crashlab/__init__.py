"""crashlab: crash-test an agent's tool-calling loop at every point it can die."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("crashlab")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
