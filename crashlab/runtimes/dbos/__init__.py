"""DBOS (`crashlab[dbos]`): a workflow of one step per tool call on SQLite; the loop is in `loop`."""

from crashlab.runtimes import Runtime

#: What DBOS stamps into its SQLite tables and never acts on when it recovers a workflow: the clock (when a
#: row was made, a step started and ended, until when it is kept) and the random IDs of the executor process
#: and of the application version it registers at each launch.
STAMPS = frozenset({
    ("application_versions", "version_id"), ("application_versions", "version_timestamp"),
    ("application_versions", "created_at"),
    ("operation_outputs", "started_at_epoch_ms"), ("operation_outputs", "completed_at_epoch_ms"),
    ("operation_outputs", "retention_timestamp"),
    ("workflow_input", "retention_timestamp"),
    ("workflow_status", "created_at"), ("workflow_status", "updated_at"), ("workflow_status", "started_at_epoch_ms"),
    ("workflow_status", "completed_at"), ("workflow_status", "owner_xid"), ("workflow_status", "creator_xid"),
})

RUNTIME = Runtime(
    name="dbos", title="DBOS", distribution="dbos",
    rows={"dbos-plain": "DBOS workflow, plain steps", "dbos-keyed": "DBOS workflow, keyed steps"},
    notes={"dbos-keyed": "key: workflow ID and step ID"},
    guarantee="steps get at-least-once guarantees and workflow outcomes are persisted exactly-once.",
    kept_in_directory=True,
    volatile=STAMPS,
    source="https://docs.dbos.dev/explanations/concurrent-executions",
)
