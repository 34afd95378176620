"""Pydantic AI (`crashlab[pydanticai]`): an agent keeping its conversation, or durable with DBOS (the loop: `loop`)."""

from crashlab.durable.content import ISO_TIME, UUID
from crashlab.runtimes import Runtime
from crashlab.runtimes.dbos import STAMPS

RUNTIME = Runtime(
    name="pydanticai", title="Pydantic AI", distribution="pydantic-ai-slim",
    rows={
        "pydanticai-plain": "Pydantic AI agent, conversation stored",
        "pydanticai-dbos": "Pydantic AI agent, DBOS durability",
        "pydanticai-keyed": "Pydantic AI agent, DBOS, keyed tools",
        "pydanticai-inline": "Pydantic AI agent, DBOS, tools not steps",
    },
    notes={
        "pydanticai-plain": "result.conversation stored when the run returns: a restart starts over",
        "pydanticai-dbos": "DBOSDurability, each tool a @DBOS.step",
        "pydanticai-keyed": "key: DBOS workflow ID and step ID",
        "pydanticai-inline": "DBOSDurability, tools left undecorated (run in workflow code)",
    },
    guarantee="Steps may perform I/O (network, disk, API calls). If a step fails, it restarts from the beginning.",
    kept_in_directory=True,
    volatile=STAMPS,  # its durable rows are DBOS's, over the same tables
    # Each message's time and how long its model call took, and the IDs of the run and the conversation. (Not
    # the times DBOS pickles into its step outputs: those rows stay distinct.)
    minted=b"|".join((UUID, ISO_TIME, rb"(?<=\"duration\":\")PT[0-9.]+S")),
    source="https://ai.pydantic.dev/durable_execution/dbos/",
)
