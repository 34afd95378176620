"""The job's model as a service: OpenAI's Chat Completions and Responses, Anthropic's Messages, on one script.

A program that calls a model through its official SDK finds this one through the variables the SDKs
read (``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``, any key), so nothing in it changes for a sweep.
Each request is read by its wire (`openai_wire`, `anthropic_wire`), its reply decided by the
conversation it holds (`script`), and written back in the wire's own types, streamed if asked.

The harness sees every request on the control line, as it sees the tracker's: the point
``model-asked`` as a request that keeps to the script arrives, then the model call, counted with the
calls a loop reports (``/model/calls``, the ``calls+`` column), and with it the point
``model-answered``, just before the reply leaves. A death at ``model-asked`` (the harness says
`GONE`) leaves the call unpaid and unanswered; a death at ``model-answered`` leaves it paid and its
reply lost. A conversation off the script is a note ``off-script`` on the line, for the sweep to
refuse the scenario, and a one-line 400 for the program; a request that is not its wire's is
``refused``, 400, as the tracker's are.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.responses import JSONResponse, Response

from crashlab.service.control import GONE, LineBroken
from crashlab.service.script import Asked, Malformed, OffScript, Reply, Script, digest
from crashlab.service.tracker import Service

#: The model's routes, each the wire it speaks and the package whose types it writes.
ROUTES = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}
PACKAGES = {"chat": "openai", "responses": "openai", "messages": "anthropic"}


@dataclass(frozen=True)
class Wire:
    """One wire format: how a request is read, a reply and an error written, and its tool-call IDs' prefix."""

    read: Callable[[dict[str, Any]], Asked]
    write: Callable[[Reply, Asked, dict[str, Any], str, int], dict[str, Any] | bytes]
    error: Callable[[str, str], dict[str, Any]]
    prefix: str


def wire(api: str) -> Wire:
    """The wire `api` speaks, imported now: its SDK's types load on the route's first request, not before."""
    if api == "messages":
        from crashlab.service import anthropic_wire as anthropic

        return Wire(anthropic.messages_asked, lambda reply, asked, body, ident, created: anthropic.messages_reply(
            reply, asked, ident), lambda message, code: anthropic.error(message), "toolu_")
    from crashlab.service import openai_wire as openai

    if api == "chat":
        return Wire(openai.chat_asked, openai.chat_reply, openai.error, "call_")
    return Wire(openai.responses_asked, lambda reply, asked, body, ident, created: openai.responses_reply(
        reply, asked, ident, created), openai.error, "call_")


class Model:
    """The model's three routes over one `Service` (its store and control line) and one `Script`, if any."""

    def __init__(self, service: Service, script: Script | None):
        self.service = service
        self.script = script

    def describe(self) -> str:
        if self.script is None:
            return "no model (start it with --job JOB to play a job's model)"
        job = self.script.job
        return (f"the model of job {job.name} ({len(job.turns)} replies, tool-call IDs {self.script.ids}) at "
                f"{', '.join(ROUTES.values())}")

    async def refuse(self, api: str, status: int, message: str) -> Response:
        """A request refused before it was read (not JSON, not an object), in its wire's error, noted as refused."""
        try:
            return await self._refused(api, wire(api), status, message)
        except ModuleNotFoundError as missing:
            return self._missing(missing)
        except LineBroken:
            return JSONResponse({"error": "the harness's control line is gone: the service is stopping"}, 503)

    async def answer(self, api: str, body: dict[str, Any]) -> Response:
        """The reply to the request `body` on the wire `api`, or its one-line refusal."""
        try:
            speaks = wire(api)
        except ModuleNotFoundError as missing:
            return self._missing(missing)
        try:
            return await self._answer(api, speaks, body)
        except LineBroken:
            return JSONResponse(speaks.error("the harness's control line is gone: the service is stopping",
                                             "stopping"), 503)

    def _missing(self, missing: ModuleNotFoundError) -> Response:
        return JSONResponse({"error": f"the model's wire needs the {missing.name} package: "
                                      "pip install 'crashlab[model]'"}, 501)

    async def _refused(self, api: str, speaks: Wire, status: int, message: str) -> Response:
        await self.service.report("refused", "model", {"status": status, "key": None, "api": api, "why": message})
        return JSONResponse(speaks.error(message, "invalid_request"), status)

    async def _answer(self, api: str, speaks: Wire, body: dict[str, Any]) -> Response:
        if self.script is None:
            return JSONResponse(speaks.error("this service plays no job's model: start it with --job JOB", "no_job"),
                                404)
        try:
            asked = speaks.read(body)
        except Malformed as malformed:
            return await self._refused(api, speaks, 400, str(malformed))
        try:
            followed = self.script.follow(asked)
        except OffScript as off:
            await self.service.report("off-script", "model", {"api": api, "why": str(off)})
            return JSONResponse(speaks.error(f"off the script of job {self.script.job.name}: {off}", "off_script"),
                                400)
        if await self.service.report("point", "model-asked", {"api": api, "turn": followed.turn}) == GONE:
            return JSONResponse(speaks.error("the program died with its request asked: nobody hears this", "gone"),
                                503)
        store = self.service.store
        generation = store.bump(f"model_asked:{followed.turn}") if self.script.drifting else 1
        calls = store.bump("model_calls")
        reply = self.script.reply(followed, generation)
        ids = {call.call: speaks.prefix + call.id for call in reply.calls}
        await self.service.report("model", "call", {"calls": calls, "call_count": calls, "reply": reply.summary,
                                                    "api": api, "turn": reply.turn, "ids": ids},
                                  point="model-answered")
        written = speaks.write(reply, asked, body, digest(self.script.job.run, "reply", calls), int(time.time()))
        if isinstance(written, bytes):
            return Response(written, media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
        return JSONResponse(written)
