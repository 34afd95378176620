"""DBOS (`crashlab[dbos]`): a workflow of one step per tool call on SQLite; the loop is in `loop`."""

from crashlab.runtimes import Runtime

RUNTIME = Runtime(
    name="dbos", title="DBOS", distribution="dbos",
    rows={"dbos-plain": "DBOS workflow, plain steps", "dbos-keyed": "DBOS workflow, keyed steps"},
    notes={"dbos-keyed": "key: workflow ID and step ID"},
    guarantee="steps get at-least-once guarantees and workflow outcomes are persisted exactly-once.",
    kept_in_directory=True,
    source="https://docs.dbos.dev/explanations/concurrent-executions",
)
