"""LlamaIndex (`crashlab[llamaindex]`): a `FunctionAgent`, its context saved as steps end; the loop is in `loop`."""

from crashlab.runtimes import Runtime

RUNTIME = Runtime(
    name="llamaindex", title="LlamaIndex Workflows", distribution="llama-index-workflows",
    rows={
        "llamaindex-plain": "LlamaIndex FunctionAgent, plain tools",
        "llamaindex-keyed": "LlamaIndex FunctionAgent, keyed tools",
        "llamaindex-json": "LlamaIndex FunctionAgent, JSON-only context",
    },
    notes={
        "llamaindex-keyed": "key: run ID and tool ID",
        "llamaindex-json": "ctx.to_dict()'s default JsonSerializer: the agent's memory is not saved",
    },
    guarantee="A step that was mid-execution when you captured the state is rewound and runs again from the top. "
              "Resume is at-least-once, and step side effects need to be safe to repeat.",
    kept_in_directory=True,
    source="https://developers.llamaindex.ai/python/llamaagents/workflows/durable_workflows/",
)
