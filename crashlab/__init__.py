"""crashlab: crash-test an agent's tool-calling loop at every point it can die."""


def __getattr__(name: str) -> str:
    """`__version__`, read from the installed metadata only when asked: importing crashlab stays fast."""
    if name != "__version__":
        raise AttributeError(f"module 'crashlab' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("crashlab")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"
