// An agent written as the `openai` npm package's docs write one: a hand-written tool loop on Chat Completions,
// run as `node agent.mjs [--keyed]` (Node 20; `npm ci` in this folder installs the package), that knows nothing
// of crashlab.
//
// The client reads OPENAI_BASE_URL and OPENAI_API_KEY from the environment, as it always does; the tools call the
// issue service at ISSUES_URL (crashlab's at CRASHLAB_TRACKER_URL when no other is set) with Node's own fetch.
// The conversation is kept in conversation.jsonl in the working directory, a line appended and synced as each
// message is decided, so a restart resumes it: it asks the model again only when the last reply's every call has
// its result, and runs a call that has none. With --keyed each changing request carries an Idempotency-Key made
// of the run's ID and the model's tool-call ID.
import { randomUUID } from "node:crypto";
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, writeSync } from "node:fs";
import OpenAI from "openai";

const SAVED = "conversation.jsonl";
const TASK = "Triage the reports: file the login and export issues, then link the login report to the cookie bug.";
const TOOLS = [
  { type: "function", function: { name: "create_issue", description: "File an issue.", parameters: {
    type: "object", properties: { title: { type: "string" }, body: { type: "string" } }, required: ["title", "body"] } } },
  { type: "function", function: { name: "search", description: "Search the issues.", parameters: {
    type: "object", properties: { query: { type: "string" } }, required: ["query"] } } },
  { type: "function", function: { name: "comment", description: "Comment on an issue.", parameters: {
    type: "object", properties: { issue: { type: "integer" }, body: { type: "string" } }, required: ["issue", "body"] } } },
];
const keyed = process.argv.slice(2).includes("--keyed");
const service = process.env.ISSUES_URL || process.env.CRASHLAB_TRACKER_URL;

async function request(method, path, payload, key) {
  const headers = { "Content-Type": "application/json", ...(key ? { "Idempotency-Key": key } : {}) };
  const answer = await fetch(service + path,
    { method, headers, ...(payload === undefined ? {} : { body: JSON.stringify(payload) }) });
  if (!answer.ok) throw new Error(`${method} ${path}: ${answer.status} ${await answer.text()}`);
  return answer.json();
}

function runTool(name, args, key) {
  if (name === "create_issue") return request("POST", "/issues", { title: args.title, body: args.body }, key);
  if (name === "comment") return request("POST", `/issues/${args.issue}/comments`, { body: args.body }, key);
  return request("GET", `/search?${new URLSearchParams({ q: args.query })}`);
}

function append(messages, message) {
  const file = openSync(SAVED, "a");
  writeSync(file, JSON.stringify(message) + "\n");
  fsyncSync(file);
  closeSync(file);
  messages.push(message);
}

const messages = existsSync(SAVED)
  ? readFileSync(SAVED, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line)) : [];
if (messages.length === 0) {
  append(messages, { role: "system", content: `run ${randomUUID()}` });
  append(messages, { role: "user", content: TASK });
}
const run = messages[0].content.replace(/^run /, "");
const client = new OpenAI();
while (true) {
  const last = messages.at(-1);
  const answered = new Set(messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id));
  const pending = last.role === "user" ? [] : messages.filter((m) => m.role === "assistant")
    .flatMap((m) => m.tool_calls ?? []).filter((call) => !answered.has(call.id));
  if (pending.length === 0) {
    if (last.role === "assistant" && !last.tool_calls?.length) break; // the final answer is saved: the run is done
    const reply = await client.chat.completions.create({ model: "gpt-4o-mini", messages, tools: TOOLS });
    const { role, content, tool_calls } = reply.choices[0].message;
    append(messages, { role, content, ...(tool_calls?.length ? { tool_calls } : {}) });
    continue;
  }
  for (const call of pending) {
    const key = keyed ? `${run}:${call.id}` : null;
    const result = await runTool(call.function.name, JSON.parse(call.function.arguments), key);
    append(messages, { role: "tool", tool_call_id: call.id, content: JSON.stringify(result) });
  }
}
