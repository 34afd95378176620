"""Temporal (`crashlab[temporal]`): a workflow of one activity per tool call on a dev server; the loop is in `loop`.

The rows besides plain and keyed are the two settings Temporal's documentation names that move the
window: local activities (recorded with the workflow task that follows them) and a retry policy of one
attempt (no activity runs twice; a worker's death inside one fails the workflow).
"""

from crashlab.runtimes import Runtime

RUNTIME = Runtime(
    name="temporal", title="Temporal", distribution="temporalio",
    rows={"temporal-plain": "Temporal workflow, plain activities",
          "temporal-keyed": "Temporal workflow, keyed activities",
          "temporal-local": "Temporal workflow, local activities",
          "temporal-once": "Temporal workflow, activities never retried"},
    notes={"temporal-keyed": "key: workflow run ID and activity ID",
           "temporal-local": "execute_local_activity: the result is recorded with the next workflow task",
           "temporal-once": "RetryPolicy(maximum_attempts=1): a timed-out activity fails the workflow"},
    guarantee=("For an Activity with a Retry Policy that allows retries, Temporal guarantees that the Activity will be "
               "observed as completed exactly once. However, the Activity may be executed multiple times and may even "
               "partially complete more than once during this process."),
    source="https://docs.temporal.io/activity-definition#activity-retry-policy",
)
