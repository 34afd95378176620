"""Microsoft Agent Framework (`crashlab[msagent]`): an agent in a workflow checkpointed to files; loop in `loop`."""

from crashlab.runtimes import Runtime

RUNTIME = Runtime(
    name="msagent", title="Microsoft Agent Framework", distribution="agent-framework-core",
    rows={
        "msagent-plain": "Agent Framework workflow, plain tools",
        "msagent-keyed": "Agent Framework workflow, keyed tools",
        "msagent-approval": "Agent Framework workflow, approved tools",
        "msagent-named": "Agent Framework workflow, keyed tools, named session",
        "msagent-parallel": "Agent Framework workflow, a reply's tools at once",
    },
    notes={
        "msagent-plain": "allow_concurrent_invocation=False: a reply's calls in turn (the default: at once)",
        "msagent-keyed": "key: agent session ID (restored from the checkpoint) and call ID",
        "msagent-approval": "approval_mode='always_require': each reply waits for a person, a superstep boundary",
        "msagent-named": "keyed, the session named by the caller (AgentSession(session_id=run ID)), not restored",
        "msagent-parallel": "the default, allow_concurrent_invocation=True: a reply's tools at once, each on a thread",
    },
    scheduled=frozenset({"msagent-parallel"}),
    guarantee="Checkpoints are created at the end of each superstep, after all executors in that superstep have "
              "completed their execution.",
    source="https://learn.microsoft.com/agent-framework/workflows/checkpoints?pivots=programming-language-python",
)
