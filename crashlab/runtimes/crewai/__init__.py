"""CrewAI Flows (`crashlab[crewai]`): a Flow saved by ``@persist`` on SQLite, one method a turn; see `loop`."""

from crashlab.runtimes import Runtime

RUNTIME = Runtime(
    name="crewai", title="CrewAI Flows", distribution="crewai",
    rows={
        "crewai-plain": "CrewAI Flow, @persist on the class, plain tools",
        "crewai-keyed": "CrewAI Flow, @persist on the class, keyed tools",
        "crewai-method": "CrewAI Flow, @persist on each method",
    },
    notes={
        "crewai-keyed": "key: the flow's state ID and the call ID",
        "crewai-method": "@persist on each method: saved, but the flow has no persistence to restore from by ID",
    },
    guarantee="When applied at the class level, `@persist()` saves state after every method execution",
    source="https://docs.crewai.com/en/guides/flows/mastering-flow-state",
)
