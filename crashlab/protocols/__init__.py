"""The protocols every other part of crashlab speaks, at the bottom of its layers.

Read these first. `points` is the crash-point call and the recorder that sees every event (the
lowest layer: the world and the durable store call it too); `run` is the loop protocol, ``entry(run)``;
`variant` a loop under test; `death` what a death leaves; `outcome` what a scenario came to;
`scenario` a scenario's setup, its ID and the rules a run of it keeps; `fault` the fault protocol
and its plug-in registry; `runner` the runner protocol. They import nothing above them: the
runners and faults implement them, and the engine orchestrates through them
(`docs/architecture.md` draws the layers, and `tests/test_layers.py` holds the code to them).
"""
