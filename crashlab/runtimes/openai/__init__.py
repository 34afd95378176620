"""OpenAI Agents SDK (`crashlab[openai]`): an `Agent` on a file-backed `SQLiteSession`; the loop is in `loop`."""

from crashlab.runtimes import Agent, Runtime

RUNTIME = Runtime(
    name="openai", title="OpenAI Agents SDK", distribution="openai-agents",
    rows={
        "openai-plain": "OpenAI Agents SDK agent, plain tools",
        "openai-keyed": "OpenAI Agents SDK agent, keyed tools",
        "openai-approve": "OpenAI Agents SDK agent, tools needing approval",
        "openai-parallel": "OpenAI Agents SDK agent, a reply's tools at once",
    },
    notes={
        "openai-keyed": "key: session ID and tool-call ID",
        "openai-approve": "needs_approval=True: each pause's RunState saved to a file, resumed from it",
        "openai-parallel": "the SDK's default concurrency: a reply's tools at once, each on a thread",
    },
    guarantee="After each run: All new items generated during the run (user input, assistant responses, "
              "tool calls, etc.) are automatically stored in the session.",
    scheduled=frozenset({"openai-parallel"}),
    kept_in_directory=True,
    source="https://openai.github.io/openai-agents-python/sessions/",
    agent=Agent("openai-agents-sdk", "openai_agents_sdk.py", ("agents",)),
)
