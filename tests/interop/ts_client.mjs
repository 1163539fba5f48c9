// What the official TypeScript MCP client (the SDK most agents and IDEs embed) sees of project-ledger.
//
// Usage: node tests/interop/ts_client.mjs <server command> [server args...]
//
// Starts the server over stdio with the SDK's StdioClientTransport (from the working directory, as a
// desktop client would), goes through the session an agent has, and prints one JSON object of what it
// observed on stdout. It judges nothing itself: tests/test_interop.py asserts on the report. If a step
// throws, the report says which step and why, and the exit code is 1. The server's stderr passes through
// to this script's stderr.
//
// Calls go through client.callTool, which checks every structuredContent against the tool's outputSchema
// (listTools first, so the SDK has the schemas): a result the schema refuses fails the step.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LATEST_PROTOCOL_VERSION, McpError } from '@modelcontextprotocol/sdk/types.js';

const REMEMBERED = 'Interop check: invoices are stored as integer cents, never floats.';
const QUERY = 'invoices integer cents';
const TOOLS_OF_INTEREST = ['remember', 'recall', 'context', 'forget', 'status'];

const [command, ...args] = process.argv.slice(2);
if (!command) {
    console.error('usage: node ts_client.mjs <server command> [server args...]');
    process.exit(2);
}

const report = { sdk: { offered_protocol_version: LATEST_PROTOCOL_VERSION }, step_ms: {} };
let current = 'start';

/** Run one step of the session, remembering its name in case it throws. */
async function step(name, fn) {
    current = name;
    const started = performance.now();
    try {
        return await fn();
    } finally {
        report.step_ms[name] = Math.round(performance.now() - started);
    }
}

/** A tool call the way a careless model makes it: whatever the server does, say how it answered. */
async function attempt(client, name, args) {
    try {
        const result = await client.callTool({ name, arguments: args });
        return { answer: 'result', is_error: result.isError === true, text: textOf(result.content) };
    } catch (error) {
        if (error instanceof McpError) {
            return { answer: 'jsonrpc-error', code: error.code, message: error.message };
        }
        throw error;
    }
}

/** The text parts of a result's content, joined. */
function textOf(content) {
    return (content ?? []).filter((part) => part.type === 'text').map((part) => part.text).join('\n');
}

/** A successful call's structured content and text; an error result fails the step. */
async function call(client, name, args) {
    const result = await client.callTool({ name, arguments: args });
    if (result.isError) {
        throw new Error(`${name} failed: ${textOf(result.content)}`);
    }
    return { structured: result.structuredContent ?? null, text: textOf(result.content) };
}

// The SDK starts the server with its default environment (HOME, PATH...); LEDGER_* settings given to this
// script are added to it, as the `env` of a client's server config would be.
const settings = Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('LEDGER_')));
const transport = new StdioClientTransport({ command, args, env: settings, stderr: 'inherit' });
// The client hands the negotiated version to transports that want it (HTTP puts it in a header);
// stdio has no use for it, so this is the one place it shows.
transport.setProtocolVersion = (version) => {
    report.negotiated_protocol_version = version;
};
const client = new Client({ name: 'project-ledger-interop-ts', version: '1.0.0' }, { capabilities: {} });

try {
    await step('connect', () => client.connect(transport));
    report.server_info = client.getServerVersion();
    report.server_capabilities = client.getServerCapabilities();
    report.instructions = client.getInstructions() ?? null;

    const { tools } = await step('listTools', () => client.listTools());
    report.tool_names = tools.map((tool) => tool.name);
    report.tools = Object.fromEntries(
        tools
            .filter((tool) => TOOLS_OF_INTEREST.includes(tool.name))
            .map((tool) => [
                tool.name,
                {
                    title: tool.title ?? null,
                    input_schema: tool.inputSchema,
                    has_output_schema: tool.outputSchema !== undefined,
                    annotations: tool.annotations ?? null,
                },
            ]),
    );

    report.remember = await step('remember', () => call(client, 'remember', { text: REMEMBERED, kind: 'decision', tags: ['interop'] }));
    report.remember.sent = REMEMBERED;
    report.recall = await step('recall', () => call(client, 'recall', { query: QUERY, k: 3 }));
    report.recall.query = QUERY;
    report.context = await step('context', () => call(client, 'context', { query: QUERY, token_budget: 2000 }));

    const { resources } = await step('listResources', () => client.listResources());
    report.resources = resources.map(({ uri, name, mimeType }) => ({ uri, name, mimeType: mimeType ?? null }));
    const read = await step('readResource', () => client.readResource({ uri: 'ledger://project-context' }));
    report.project_context = read.contents.map(({ uri, mimeType, text }) => ({ uri, mimeType: mimeType ?? null, text: text ?? null }));

    const { prompts } = await step('listPrompts', () => client.listPrompts());
    report.prompts = prompts.map(({ name, title, arguments: promptArgs }) => ({ name, title: title ?? null, arguments: promptArgs ?? [] }));
    const prompt = await step('getPrompt', () => client.getPrompt({ name: 'session_start' }));
    report.session_start = prompt.messages.map(({ role, content }) => ({ role, type: content.type, text: content.text ?? null }));

    report.bad_calls = await step('bad calls', async () => ({
        recall_k_not_a_number: await attempt(client, 'recall', { query: QUERY, k: 'many' }),
        forget_unknown_id: await attempt(client, 'forget', { id: 'no-such-memory' }),
        remember_without_text: await attempt(client, 'remember', {}),
        unknown_tool: await attempt(client, 'no_such_tool', {}),
    }));
    report.after_bad_calls = await step('recall after bad calls', () => call(client, 'recall', { query: QUERY, k: 1 }));

    report.ok = true;
} catch (error) {
    report.ok = false;
    report.failed_step = current;
    report.error = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
} finally {
    await step('close', () => client.close().catch(() => {}));
}

process.stdout.write(JSON.stringify(report) + '\n');
process.exitCode = report.ok ? 0 : 1;
