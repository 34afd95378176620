"""Prefect 3 (`crashlab[prefect]`): a flow of one task per tool call on SQLite; the loop is in `loop`."""

from crashlab.runtimes import Runtime

RUNTIME = Runtime(
    name="prefect", title="Prefect", distribution="prefect",
    rows={"prefect-plain": "Prefect flow, plain tasks",
          "prefect-persist": "Prefect flow, persisted results",
          "prefect-keyed": "Prefect flow, persisted results, keyed tasks",
          "prefect-new-run": "Prefect flow, persisted results, restarted as a new flow run",
          "prefect-inputs": "Prefect flow, persisted results, cache_policy=INPUTS, new flow run"},
    notes={"prefect-persist": "persist_result=True: the default cache policy (inputs, source, flow run ID)",
           "prefect-keyed": "key: the task's transaction key (its cache key: flow run ID, task source, inputs)",
           "prefect-new-run": "restart calls the flow again: a new flow run ID, so the default key never matches",
           "prefect-inputs": "cache_policy=INPUTS: the key leaves the flow run out, so a new flow run matches"},
    guarantee=("A transaction runs at most one time, and produces a result record upon completion at a unique "
               "address specified by a dynamically computed cache key."),
    source="https://docs.prefect.io/v3/advanced/transactions",
)
