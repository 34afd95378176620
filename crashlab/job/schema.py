"""The job file's JSON Schema, derived by msgspec from typed structures that mirror the job.

`crashlab.job` stays the reader: its hand-written checks name the place as a person reads it
("turn 2 call 1: title must be a string (got a list)") and list the valid choices, which msgspec's
messages ("Expected `str`, got `array` - at `$.turns[1].calls[0].args.title`") do not. These types
exist so that editors can check a job as it is typed; every limit in them is the reader's own
constant, and a test holds the schema and the reader to the same verdicts on the shipped and the
hostile jobs.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from crashlab.job.calls import TOOLS
from crashlab.job.reader import ID_GRAMMAR, ID_RULE, MAX_ISSUE, TEXT_LIMITS, TOOL_GRAMMAR, TOOL_RULE

ID = Annotated[str, Meta(pattern=f"^{ID_GRAMMAR}$", description=ID_RULE)]
#: Titles and queries: one line, not blank. JSON Schema cannot say "no control characters" briefly,
#: so the pattern asks for a visible character and the reader checks the rest.
Title = Annotated[str, Meta(min_length=1, max_length=TEXT_LIMITS["title"], pattern=r"\S",
                            description="one line, no control characters")]
Query = Annotated[str, Meta(min_length=1, max_length=TEXT_LIMITS["query"], pattern=r"\S",
                            description="one line, no control characters")]
Body = Annotated[str, Meta(max_length=TEXT_LIMITS["body"], description="line breaks and tabs allowed")]
Answer = Annotated[str, Meta(max_length=TEXT_LIMITS["answer"], description="the model's final reply")]
Description = Annotated[str, Meta(max_length=TEXT_LIMITS["description"], description="one line, for `crashlab jobs`")]
Issue = (Annotated[int, Meta(ge=1, le=MAX_ISSUE, description="an issue that already exists")]
         | Annotated[str, Meta(pattern=rf"^\${ID_GRAMMAR}$",
                             description="\"$ID\": the issue an earlier create_issue made")])


class Strict(Struct, forbid_unknown_fields=True, tag_field="tool"):
    """Every call: unknown fields are refused, and `tool` says which arguments it takes."""


class CreateIssueArgs(Struct, forbid_unknown_fields=True):
    title: Title
    body: Body


class CommentArgs(Struct, forbid_unknown_fields=True):
    issue: Issue
    body: Body


class SearchArgs(Struct, forbid_unknown_fields=True):
    query: Query


class CreateIssue(Strict, tag="create_issue"):
    """Files an issue: changes the tracker."""

    id: ID
    args: CreateIssueArgs
    fails_after_accept: bool = False
    needs_approval: bool = False


class Comment(Strict, tag="comment"):
    """Comments on an issue: changes the tracker."""

    id: ID
    args: CommentArgs
    fails_after_accept: bool = False
    needs_approval: bool = False


class Search(Strict, tag="search"):
    """Searches the tracker: only reads."""

    id: ID
    args: SearchArgs
    fails_after_accept: bool = False
    needs_approval: bool = False


class OwnCall(Struct, forbid_unknown_fields=True):
    """A tool of a program's own: any name but crashlab's three, any JSON arguments."""

    id: ID
    tool: Annotated[str, Meta(pattern=f"^{TOOL_GRAMMAR}$", description=TOOL_RULE)]
    args: dict[str, Any] = msgspec.field(default_factory=dict)


class Turn(Struct, forbid_unknown_fields=True):
    """One model reply: either `calls` (run in order) or, last of all, `answer`. Exactly one of the two."""

    calls: Annotated[list[CreateIssue | Comment | Search], Meta(min_length=1)] | UnsetType = UNSET
    answer: Answer | UnsetType = UNSET


class JobFile(Struct, forbid_unknown_fields=True):
    """A crashlab job: the model's script, one turn per reply, the final answer last."""

    name: ID
    turns: Annotated[list[Turn], Meta(min_length=1)]
    run: ID | UnsetType = UNSET  # default: "<name>-run-1"
    description: Description = ""


def job_schema() -> dict[str, Any]:
    """The JSON Schema of a job file, for editors and other tools: crashlab's three tools' calls, each checked by its
    arguments, or a call of a tool of a program's own (`OwnCall`), whose name is none of theirs."""
    schema = msgspec.json.schema(JobFile)
    own = msgspec.json.schema(OwnCall)["$defs"]["OwnCall"]
    own["properties"]["tool"]["not"] = {"enum": list(TOOLS)}
    schema["$defs"]["OwnCall"] = own
    calls = schema["$defs"]["Turn"]["properties"]["calls"]["items"]
    calls.pop("discriminator")  # a call's tool names its kind only among crashlab's; any other is a program's own
    calls["anyOf"].append({"$ref": "#/$defs/OwnCall"})
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "crashlab job", **schema}
