// The TypeScript SDK's experimental tasks client (v1, 2025-11-25) against an mcpsync
// server on stdio. Usage: node ts_tasks_client.mjs <sdk dir> <python> <module>
// Prints one JSON report on stdout.
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdkDir, python, module] = process.argv.slice(2);
const load = (rel) => import(pathToFileURL(path.join(sdkDir, "dist", "esm", rel)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");
const { ElicitRequestSchema } = await load("types.js");

const client = new Client({ name: "ts-tasks", version: "1.0.0" },
  { capabilities: { elicitation: {}, tasks: { requests: {} } } });
const elicitations = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  // While the question waits, the task says input_required (asked before answering).
  const related = request.params._meta?.["io.modelcontextprotocol/related-task"];
  const during = related ? await client.experimental.tasks.getTask(related.taskId) : null;
  elicitations.push({ params: request.params, statusWhileAsking: during?.status ?? null });
  return { action: "accept", content: { name: "Tess" } };
});
await client.connect(new StdioClientTransport({
  command: python, args: ["-m", module], env: { ...process.env },
}));

const report = { capabilities: client.getServerCapabilities() };
const tools = await client.listTools();
report.taskSupport = Object.fromEntries(
  tools.tools.map((t) => [t.name, t.execution?.taskSupport ?? null]));

async function stream(name, args) {
  const seen = [];
  for await (const message of client.experimental.tasks.callToolStream(
      { name, arguments: args }, undefined, { task: { ttl: 60000 } })) {
    if (message.type === "taskCreated") seen.push({ type: "taskCreated", task: message.task });
    else if (message.type === "taskStatus") seen.push({ type: "taskStatus", status: message.task.status });
    else if (message.type === "result") seen.push({ type: "result", result: message.result });
    else seen.push({ type: message.type, error: String(message.error?.message ?? message.error) });
  }
  return seen;
}

report.slow = await stream("slow", { seconds: 0.3 });
report.ask = await stream("ask_name", {});
report.elicitations = elicitations;
report.toolError = await stream("tool_error", {});
const created = report.slow.find((m) => m.type === "taskCreated");
report.getTask = await client.experimental.tasks.getTask(created.task.taskId);
report.list = await client.experimental.tasks.listTasks();
await client.close();
console.log(JSON.stringify(report));
