// A 2026-07-28 server with the tasks extension (io.modelcontextprotocol/tasks, SEP-2663) on the
// TypeScript SDK v2 (@modelcontextprotocol/server 2.3.1): the SDK serves the era (server/discover,
// the _meta envelope, stdio and Streamable HTTP); the task surface (flat CreateTaskResult,
// tasks/get with inline result/error/inputRequests, tasks/update, tasks/cancel) is this file's,
// its shapes checked with @modelcontextprotocol/ext-tasks' own v2 guards before they are sent.
// Run: NODE_PATH=<peers>/npm/node_modules node tasks_v2_server.cjs [--http PORT]
//
// Tools (task = answers with a task when the request declares the extension):
//   greet    sync         "Hello, NAME!"
//   slow     task         {seconds, text}: "done: TEXT" after SECONDS
//   ask      task         an elicitation/create inputRequest, then "hello NAME"
//   fail     task         ends `failed` with error {code: -32603, message: "the job broke"}
//   oops     task         completes with an isError result ("tool error")
//   report   sync         JSON {taskId: status} of every task this process created
"use strict";
const http = require("node:http");
const { randomBytes } = require("node:crypto");
const { Server, createMcpHandler } = require("@modelcontextprotocol/server");
const { serveStdio } = require("@modelcontextprotocol/server/stdio");
const z = require("zod");

const EXT = "io.modelcontextprotocol/tasks";
const TERMINAL = ["completed", "failed", "cancelled"];
const tasks = new Map(); // one store for every per-request server instance of this process
let guards; // ext-tasks' v2 shape guards (ESM, loaded at start)

const text = (t) => ({ content: [{ type: "text", text: t }] });
const now = () => new Date().toISOString();

function declared(ctx) {
  const caps = ctx.mcpReq.envelope?.["io.modelcontextprotocol/clientCapabilities"]
    ?? ctx.mcpReq.envelope?.clientCapabilities;
  return !!(caps && caps.extensions && caps.extensions[EXT]);
}

function view(task) {
  const { taskId, status, statusMessage, createdAt, lastUpdatedAt, ttlMs, pollIntervalMs } = task;
  const base = { taskId, status, createdAt, lastUpdatedAt, ttlMs, pollIntervalMs };
  if (statusMessage) base.statusMessage = statusMessage;
  return base;
}

function detailed(task) {
  const out = view(task);
  if (task.status === "completed") out.result = task.result;
  if (task.status === "failed") out.error = task.error;
  if (task.status === "input_required") out.inputRequests = task.inputRequests;
  if (!guards.isDetailedTaskV2(out)) throw new Error(`not a DetailedTask: ${JSON.stringify(out)}`);
  return out;
}

function settle(task, status, fields) {
  if (TERMINAL.includes(task.status)) return;
  Object.assign(task, fields, { status, lastUpdatedAt: now() });
  if (status !== "input_required") delete task.inputRequests;
}

const work = {
  async slow(task, args) {
    await new Promise((resolve) => {
      task.timer = setTimeout(resolve, 1000 * (args.seconds ?? 0));
      task.wake = resolve;
    });
    settle(task, "completed", { result: text(`done: ${args.text ?? ""}`) });
  },
  async ask(task) {
    const answered = new Promise((resolve) => { task.answer = resolve; });
    settle(task, "input_required", {
      statusMessage: "who is there?",
      inputRequests: {
        name: {
          method: "elicitation/create",
          params: {
            mode: "form",
            message: "Your name?",
            requestedSchema: { type: "object", properties: { name: { type: "string" } } },
          },
        },
      },
    });
    const responses = await answered;
    const answer = responses.name;
    settle(task, "working", { statusMessage: "thanks" });
    const name = answer && answer.action === "accept" ? answer.content.name : "(no answer)";
    settle(task, "completed", { result: text(`hello ${name}`) });
  },
  async fail(task) {
    settle(task, "failed", { error: { code: -32603, message: "the job broke" } });
  },
  async oops(task) {
    settle(task, "completed", { result: { ...text("tool error"), isError: true } });
  },
};

function createTask(name, args) {
  const stamp = now();
  const task = {
    taskId: randomBytes(16).toString("hex"),
    status: "working",
    createdAt: stamp,
    lastUpdatedAt: stamp,
    ttlMs: 600000,
    pollIntervalMs: 50,
  };
  tasks.set(task.taskId, task);
  setImmediate(() => work[name](task, args).catch((error) =>
    settle(task, "failed", { error: { code: -32603, message: String(error) } })));
  const created = { ...view(task), resultType: "task" };
  if (!guards.isCreateTaskResultV2(created)) throw new Error("not a CreateTaskResult");
  return created;
}

function lookup(taskId) {
  const task = tasks.get(taskId);
  if (!task) {
    const error = new Error(`Task not found: ${taskId}`);
    error.code = -32602;
    throw error;
  }
  return task;
}

function gate(ctx) {
  if (!declared(ctx)) {
    const error = new Error(`Missing required client capability: ${EXT}`);
    error.code = -32021;
    error.data = { requiredCapabilities: { extensions: { [EXT]: {} } } };
    throw error;
  }
}

const schema = { type: "object", properties: { seconds: { type: "number" }, text: { type: "string" } } };
const TOOLS = [
  { name: "greet", inputSchema: { type: "object", properties: { name: { type: "string" } } } },
  ...Object.keys(work).map((name) => ({ name, inputSchema: schema })),
  { name: "report", inputSchema: { type: "object" } },
];

function build() {
  const server = new Server(
    { name: "tasks-v2-peer", version: "1.0.0" },
    { capabilities: { tools: {}, extensions: { [EXT]: {} } } },
  );
  server.setRequestHandler("tools/list", async () => ({ tools: TOOLS }));
  server.setRequestHandler("tools/call", async (request, ctx) => {
    const { name, arguments: args = {} } = request.params;
    if (name === "greet") return text(`Hello, ${args.name ?? "World"}!`);
    if (name === "report") {
      const statuses = {};
      for (const [id, task] of tasks) statuses[id] = task.status;
      return text(JSON.stringify(statuses));
    }
    if (!(name in work)) {
      const error = new Error(`Unknown tool: ${name}`);
      error.code = -32602;
      throw error;
    }
    if (!declared(ctx)) {
      if (name === "slow") return text(`done (sync): ${args.text ?? ""}`);
      gate(ctx);
    }
    return createTask(name, args);
  });
  const TaskId = z.object({ taskId: z.string() }).passthrough();
  server.setRequestHandler("tasks/get", { params: TaskId }, async (params, ctx) => {
    gate(ctx);
    return detailed(lookup(params.taskId));
  });
  server.setRequestHandler(
    "tasks/update",
    { params: TaskId },
    async (params, ctx) => {
      gate(ctx);
      const task = lookup(params.taskId);
      // The SDK lifts inputResponses out of the params (its MRTR seam) into the context.
      const responses = params.inputResponses ?? ctx.mcpReq.inputResponses;
      if (!responses || typeof responses !== "object") {
        const error = new Error("tasks/update needs inputResponses");
        error.code = -32602;
        throw error;
      }
      if (task.status === "input_required" && task.answer) {
        const answer = task.answer;
        task.answer = undefined;
        answer(responses);
      }
      return {};
    },
  );
  server.setRequestHandler("tasks/cancel", { params: TaskId }, async (params, ctx) => {
    gate(ctx);
    const task = lookup(params.taskId);
    settle(task, "cancelled", { statusMessage: "cancelled by the client" });
    if (task.timer) clearTimeout(task.timer);
    return {};
  });
  return server;
}

async function serveHttp(port) {
  const handler = createMcpHandler(() => build(), { legacy: "reject" });
  // A client that goes away mid-answer (a Ctrl-C, a timeout) ends its own answer, never this
  // process: an error on either stream, or a rejected handler, would otherwise be unhandled,
  // which ends Node (and every later test of the module then found the port closed).
  http.createServer((req, res) => {
    req.on("error", () => res.destroy());
    res.on("error", () => {});
    answer(req, res).catch(() => res.destroy());
  }).listen(port, "127.0.0.1");

  async function answer(req, res) {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = Buffer.concat(chunks);
    const headers = new Headers();
    for (const [key, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(", ") : value);
    }
    const response = await handler.fetch(new Request(`http://127.0.0.1:${port}${req.url}`, {
      method: req.method,
      headers,
      body: ["GET", "HEAD"].includes(req.method) ? undefined : body,
    }));
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) {
      const reader = response.body.getReader();
      res.on("close", () => reader.cancel().catch(() => {}));  // the client left: stop
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        res.write(value);
      }
    }
    res.end();
  }
}

(async () => {
  // An ESM-only package: import() does not read NODE_PATH, so resolve it from there.
  const root = (process.env.NODE_PATH || "").split(require("node:path").delimiter)[0];
  const entry = require("node:path").join(root, "@modelcontextprotocol/ext-tasks/dist/core/v2/index.js");
  guards = await import(require("node:url").pathToFileURL(entry).href);
  const at = process.argv.indexOf("--http");
  if (at >= 0) await serveHttp(Number(process.argv[at + 1]));
  else serveStdio(() => build());
})();
