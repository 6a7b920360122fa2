// The TypeScript SDK's client against a framework site's MCP endpoint, as one user (a
// header it sends with every request). Usage: node ts_users_client.mjs <sdk dir> <url>
// <header name> <header value>. Prints one JSON report: the tool names it is shown, and
// what calling "whoami" answers.
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdkDir, url, headerName, headerValue] = process.argv.slice(2);
const load = (rel) => import(pathToFileURL(path.join(sdkDir, "dist", "esm", rel)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");

const client = new Client({ name: "ts-users", version: "1.0.0" }, { capabilities: {} });
await client.connect(new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { [headerName]: headerValue } },
}));
const tools = await client.listTools();
const whoami = await client.callTool({ name: "whoami", arguments: {} });
console.log(JSON.stringify({
  tools: tools.tools.map((t) => t.name).sort(),
  whoami: whoami.content[0].text,
}));
await client.close();
