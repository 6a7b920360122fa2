// TypeScript SDK (@modelcontextprotocol/sdk 1.32, McpServer) server for benchmarks/run.py.
//
//   NODE_PATH=<peers>/npm/node_modules node bench_ts.cjs              # stdio
//   NODE_PATH=<peers>/npm/node_modules node bench_ts.cjs --http PORT  # Streamable HTTP
//
// HTTP is the SDK's stateless JSON mode (no session id, enableJsonResponse), one McpServer
// + transport per request as its stateless example does. The SDK speaks the handshake era
// (up to 2025-11-25), so run.py drives it with the 2025-11-25 wire.
// Tools: echo(text) -> text; block(ms): answers after ms milliseconds (a timer, which is
// how a Node tool waits: the event loop is not blocked).
"use strict";
const http = require("node:http");
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");
const { StreamableHTTPServerTransport } = require("@modelcontextprotocol/sdk/server/streamableHttp.js");
const z = require("zod");

function makeServer() {
  const server = new McpServer({ name: "bench", version: "1.0.0" });
  server.registerTool("echo", { description: "Return the text unchanged.", inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: "text", text }] }));
  server.registerTool("block", { description: "Answer after ms milliseconds.", inputSchema: { ms: z.number().int() } },
    async ({ ms }) => {
      await new Promise((resolve) => setTimeout(resolve, ms));
      return { content: [{ type: "text", text: "ok" }] };
    });
  return server;
}

async function main() {
  const i = process.argv.indexOf("--http");
  if (i < 0) {
    await makeServer().connect(new StdioServerTransport());
    return;
  }
  const port = Number(process.argv[i + 1]);
  const httpServer = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", async () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        const server = makeServer();
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
        res.on("close", () => { transport.close(); server.close(); });
        await server.connect(transport);
        await transport.handleRequest(req, res, body);
      } catch (error) {
        if (!res.headersSent) {
          res.writeHead(500, { "Content-Type": "application/json" });
          res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32603, message: String(error) } }));
        }
      }
    });
  });
  httpServer.keepAliveTimeout = 75000;
  httpServer.listen(port, "127.0.0.1");
}

main().catch((error) => { console.error(error); process.exit(1); });
