"""OpenAI Agents SDK (`crashlab[openai]`): an `Agent` on a file-backed `SQLiteSession`; the loop is in `loop`."""

from crashlab.runtimes import Runtime

RUNTIME = Runtime(
    name="openai", title="OpenAI Agents SDK", distribution="openai-agents",
    rows={
        "openai-plain": "OpenAI Agents SDK agent, plain tools",
        "openai-keyed": "OpenAI Agents SDK agent, keyed tools",
    },
    notes={"openai-keyed": "key: session ID and tool-call ID"},
    guarantee="After each run: All new items generated during the run (user input, assistant responses, "
              "tool calls, etc.) are automatically stored in the session.",
    source="https://openai.github.io/openai-agents-python/sessions/",
)
