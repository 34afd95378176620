"""LangGraph (`crashlab[langgraph]`): a ReAct agent on a file-backed `SqliteSaver`; the loop is in `loop`."""

from crashlab.runtimes import Runtime

RUNTIME = Runtime(
    name="langgraph", title="LangGraph", distribution="langgraph",
    rows={
        "langgraph-plain": "LangGraph ReAct agent, plain tools",
        "langgraph-keyed": "LangGraph ReAct agent, keyed tools",
        "langgraph-v1": "LangGraph ReAct agent, v1 tool node",
        "langgraph-exit": "LangGraph ReAct agent, durability exit",
        "langgraph-parallel": "LangGraph ReAct agent, parallel tool calls",
        "langgraph-subgraph": "LangGraph ReAct agent as a subgraph",
    },
    notes={
        "langgraph-keyed": "key: thread ID and tool-call ID",
        "langgraph-v1": "version='v1': one task runs every call of a reply",
        "langgraph-exit": "durability='exit': saved only when the graph returns",
        "langgraph-parallel": "LangGraph's default concurrency: a reply's calls at once, on threads",
        "langgraph-subgraph": "the agent a node of a parent graph, saved under the subgraph's namespace",
    },
    scheduled=frozenset({"langgraph-parallel"}),
    guarantee="To make the most of durable execution, ensure that your workflow is designed to be deterministic "
              "and idempotent and wrap any side effects or non-deterministic operations inside tasks.",
    kept_in_directory=True,
    source="https://docs.langchain.com/oss/python/langgraph/durable-execution",
)
