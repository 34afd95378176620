"""OpenAI Agents SDK (`crashlab[openai]`): an `Agent` on a file-backed `SQLiteSession`; the loop is in `loop`."""

from crashlab.runtimes import Runtime

RUNTIME = Runtime(
    name="openai", title="OpenAI Agents SDK", distribution="openai-agents",
    rows={
        "openai-plain": "OpenAI Agents SDK agent, plain tools",
        "openai-keyed": "OpenAI Agents SDK agent, keyed tools",
        "openai-approve": "OpenAI Agents SDK agent, tools needing approval",
    },
    notes={
        "openai-keyed": "key: session ID and tool-call ID",
        "openai-approve": "needs_approval=True: each pause's RunState saved to a file, resumed from it",
    },
    guarantee="After each run: All new items generated during the run (user input, assistant responses, "
              "tool calls, etc.) are automatically stored in the session.",
    kept_in_directory=True,
    source="https://openai.github.io/openai-agents-python/sessions/",
)
