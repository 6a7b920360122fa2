// A 2025-11-25 tasks (v1) server on the TypeScript SDK 1.32 (@modelcontextprotocol/sdk), its
// experimental tasks API and in-memory task store: the peer mcpsync's client follows v1 tasks
// against. Run: NODE_PATH=<peers>/npm/node_modules node tasks_v1_server.cjs [--http PORT]
//
// Tools (execution.taskSupport in brackets):
//   slow     [required]  {seconds, text}: sleeps, then completes with "done: TEXT"
//   ask      [required]  elicits a name (the question travels on tasks/result), "hello NAME"
//   fail     [required]  ends `failed` with an isError result
//   maybe    [optional]  completes with "maybe: TEXT" (as a task or as a plain call)
//   plain    [forbidden] "plain: TEXT"
//   report   [forbidden] JSON {taskId: status} of every task this process created
"use strict";
const http = require("node:http");
const { randomUUID } = require("node:crypto");
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");
const { StreamableHTTPServerTransport } = require("@modelcontextprotocol/sdk/server/streamableHttp.js");
const { ElicitResultSchema, isInitializeRequest } = require("@modelcontextprotocol/sdk/types.js");
const {
  InMemoryTaskStore,
  InMemoryTaskMessageQueue,
} = require("@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js");
const z = require("zod");

const taskStore = new InMemoryTaskStore();
const queue = new InMemoryTaskMessageQueue();
const created = []; // task ids, in creation order

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (t) => ({ content: [{ type: "text", text: t }] });

async function finish(taskId, status, result) {
  const task = await taskStore.getTask(taskId);
  if (!task || ["completed", "failed", "cancelled"].includes(task.status)) return;
  await taskStore.storeTaskResult(taskId, status, result);
}

function taskTool(server, name, support, shape, work) {
  server.experimental.tasks.registerToolTask(
    name,
    { description: name, inputSchema: shape, execution: { taskSupport: support } },
    {
      async createTask(args, extra) {
        const task = await extra.taskStore.createTask({
          ttl: extra.taskRequestedTtl ?? 60000,
          pollInterval: 50,
        });
        created.push(task.taskId);
        work(task.taskId, args).catch((error) =>
          finish(task.taskId, "failed", { ...text(`error: ${error}`), isError: true }));
        return { task };
      },
      async getTask(_args, extra) {
        return extra.taskStore.getTask(extra.taskId);
      },
      async getTaskResult(_args, extra) {
        return extra.taskStore.getTaskResult(extra.taskId);
      },
    },
  );
}

function build() {
  const server = new McpServer(
    { name: "tasks-v1-peer", version: "1.0.0" },
    {
      capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore,
      taskMessageQueue: queue,
    },
  );
  const args = { seconds: z.number().optional(), text: z.string().optional() };
  taskTool(server, "slow", "required", args, async (taskId, a) => {
    await sleep(1000 * (a.seconds ?? 0));
    await finish(taskId, "completed", text(`done: ${a.text ?? ""}`));
  });
  taskTool(server, "maybe", "optional", args, async (taskId, a) => {
    await finish(taskId, "completed", text(`maybe: ${a.text ?? ""}`));
  });
  taskTool(server, "fail", "required", args, async (taskId) => {
    await sleep(50);
    await finish(taskId, "failed", { ...text("the job broke"), isError: true });
  });
  taskTool(server, "ask", "required", args, async (taskId) => {
    await taskStore.updateTaskStatus(taskId, "input_required", "who is there?");
    const answer = await server.server.request(
      {
        method: "elicitation/create",
        params: {
          message: "Your name?",
          requestedSchema: { type: "object", properties: { name: { type: "string" } } },
        },
      },
      ElicitResultSchema,
      { relatedTask: { taskId }, timeout: 60000 },
    );
    await taskStore.updateTaskStatus(taskId, "working");
    const name = answer.action === "accept" ? answer.content.name : `(${answer.action})`;
    await finish(taskId, "completed", text(`hello ${name}`));
  });
  server.registerTool("plain", { inputSchema: args }, async (a) => text(`plain: ${a.text ?? ""}`));
  server.registerTool("report", { inputSchema: {} }, async () => {
    const statuses = {};
    for (const id of created) statuses[id] = (await taskStore.getTask(id))?.status ?? "gone";
    return text(JSON.stringify(statuses));
  });
  return server;
}

async function serveHttp(port) {
  const transports = new Map();
  // A client that goes away mid-answer ends its own answer, never this process (an
  // unhandled error or rejection would end Node): see tasks_v2_server.cjs.
  const httpServer = http.createServer((req, res) => {
    req.on("error", () => res.destroy());
    res.on("error", () => {});
    answer(req, res).catch(() => res.destroy());
  });
  httpServer.listen(port, "127.0.0.1");

  async function answer(req, res) {
    let body;
    if (req.method === "POST") {
      const chunks = [];
      for await (const chunk of req) chunks.push(chunk);
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    }
    const sessionId = req.headers["mcp-session-id"];
    let transport = sessionId ? transports.get(sessionId) : undefined;
    if (!transport && req.method === "POST" && isInitializeRequest(body)) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
      await build().connect(transport);
    }
    if (!transport) {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: null,
        error: { code: -32000, message: "no valid session" } }));
      return;
    }
    await transport.handleRequest(req, res, body);
  }
}

const at = process.argv.indexOf("--http");
if (at >= 0) {
  serveHttp(Number(process.argv[at + 1]));
} else {
  build().connect(new StdioServerTransport());
}
