"""LangGraph (`crashlab[langgraph]`): a ReAct agent on a file-backed `SqliteSaver`; the loop is in `loop`."""

from crashlab.durable.content import ISO_TIME, UUID
from crashlab.runtimes import Agent, Runtime

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
    # What each process draws afresh: checkpoint, task and message IDs, the checkpoints' times, and the random
    # part of each channel version (SqliteSaver's get_next_version: the step, kept, then random.random(), whose
    # digits vary in number, so the msgpack length byte before it goes too). A message's own ID is left out: a
    # kill finds a tool's message in the saved writes with its ID or without, from run to run (likely the write
    # serialized on a background thread while add_messages gives the same object its ID; a restart gives one to a
    # message without), and with it the length in the header of the msgpack extension that holds the message.
    minted=b"(?s)" + b"|".join((rb"(?P<drop>\xa2id(?:\xd9\$" + UUID + rb"|\xc0)|\xc7.(?=\x05)|\xc8..(?=\x05))",
                                UUID, ISO_TIME, rb"(?:\xd9.)?(?P<keep>[0-9]{32}\.)0\.[0-9]+")),
    source="https://docs.langchain.com/oss/python/langgraph/durable-execution",
    agent=Agent("langgraph-react", "langgraph_react.py", ("langchain_openai",)),
)
