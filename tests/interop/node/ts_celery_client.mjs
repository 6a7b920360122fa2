// The TypeScript SDK's experimental tasks client (v1, 2025-11-25) over Streamable HTTP,
// against an mcpsync server whose tasks run on Celery workers.
// Usage: node ts_celery_client.mjs <sdk dir> <url>. Prints one JSON report on stdout.
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdkDir, url] = process.argv.slice(2);
const load = (rel) => import(pathToFileURL(path.join(sdkDir, "dist", "esm", rel)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");

const client = new Client({ name: "ts-celery", version: "1.0.0" },
  { capabilities: { tasks: { requests: {} } } });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

const seen = [];
for await (const message of client.experimental.tasks.callToolStream(
    { name: "work", arguments: { steps: 2 } }, undefined, { task: { ttl: 60000 } })) {
  if (message.type === "taskCreated") seen.push({ type: "taskCreated", task: message.task });
  else if (message.type === "taskStatus") seen.push({ type: "taskStatus", status: message.task.status });
  else if (message.type === "result") seen.push({ type: "result", result: message.result });
  else seen.push({ type: message.type, error: String(message.error?.message ?? message.error) });
}
const created = seen.find((m) => m.type === "taskCreated");
const report = { stream: seen, getTask: await client.experimental.tasks.getTask(created.task.taskId) };
await client.close();
console.log(JSON.stringify(report));
