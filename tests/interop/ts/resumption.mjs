// Interop checks: the official TypeScript MCP SDK client (@modelcontextprotocol/sdk, pinned in
// package-lock.json) against a running sluice with the default configuration.
//
// Run by tests/interop/run.sh after the Python suite, with SLUICE_URL (base URL of the main
// instance, e.g. http://127.0.0.1:PORT). Connects `Client` + `StreamableHTTPClientTransport` to
// the `interop` tenant's `agent` endpoint (handshake era, 2025-11-25: every POST answered as an
// SSE stream that opens with a priming event), lists tools, calls one, and resumes that call's
// stream with the SDK's own API (`resumptionToken` / `onresumptiontoken` request options: the
// transport GETs with `Last-Event-ID`). Every request goes through a recording `fetch`, which
// also keeps the body of each GET opened with `Last-Event-ID`, so the replay is checked as sent.
// Prints one line per check and, last, `N passed, N failed`; exits 1 on any failure.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, EmptyResultSchema } from '@modelcontextprotocol/sdk/types.js';

const BASE = (process.env.SLUICE_URL ?? '').replace(/\/+$/, '');
if (!BASE) {
  console.error('SLUICE_URL is not set');
  console.log('0 passed, 1 failed');
  process.exit(1);
}
const MCP_URL = `${BASE}/runtime/interop/agent/mcp`;
const HANDSHAKE_LATEST = '2025-11-25';
const TOOLS = ['get_customer', 'find_customers', 'place_order'];
const ADA = { id: 'c-100', name: 'Ada Lovelace', email: 'ada@example.com' };
const TIMEOUT_MS = 20000;

let passed = 0;
let failed = 0;

function expect(condition, message) {
  if (!condition) throw new Error(message);
}

// Deep equality of JSON values, key order aside (the SDK's schemas may reorder keys).
const canonical = (v) =>
  Array.isArray(v) ? v.map(canonical)
    : v && typeof v === 'object' ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical(v[k])]))
      : v;
const same = (a, b) => JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));

// Each check runs under its own ceiling; a check that cannot run because one it needs failed is
// recorded as failed with that reason.
async function check(name, body) {
  let timer;
  try {
    await Promise.race([
      body(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`did not finish within ${TIMEOUT_MS / 1000} s`)), TIMEOUT_MS);
      }),
    ]);
    passed += 1;
    console.log(`PASS   ts/${name}`);
    return true;
  } catch (error) {
    failed += 1;
    console.log(`FAIL   ts/${name}: ${error?.message ?? error}`);
    return false;
  } finally {
    clearTimeout(timer);
  }
}

function skipRest(names, why) {
  for (const name of names) {
    failed += 1;
    console.log(`FAIL   ts/${name}: not run: ${why}`);
  }
}

// Parses an SSE body into [{ id, data }] (only the fields these checks read).
function parseSse(text) {
  const events = [];
  for (const block of text.replace(/\r\n?/g, '\n').split('\n\n')) {
    let id;
    const data = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('id:')) id = line.slice(3).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    if (id !== undefined || data.length) events.push({ id, data: data.join('\n') });
  }
  return events;
}

// The `{instance}.{stream}` part of a sluice event id `{instance}.{stream}.{seq}`.
function streamOf(eventId) {
  const parts = String(eventId).split('.');
  expect(parts.length === 3 && /^\d+$/.test(parts[2]), `event id ${eventId} is not instance.stream.seq`);
  return parts.slice(0, 2).join('.');
}

// --- the recording fetch ---
const wire = { requests: [], replays: [] };

async function recordingFetch(input, init = {}) {
  const headers = new Headers(init.headers ?? {});
  const method = (init.method ?? 'GET').toUpperCase();
  let body;
  if (typeof init.body === 'string') {
    try {
      body = JSON.parse(init.body);
    } catch {
      body = undefined;
    }
  }
  const entry = { method, headers, body, status: undefined, contentType: undefined };
  wire.requests.push(entry);
  const response = await fetch(input, init);
  entry.status = response.status;
  entry.contentType = response.headers.get('content-type') ?? '';
  const lastEventId = headers.get('last-event-id');
  if (method === 'GET' && lastEventId && response.body) {
    // Keep a copy of the replay; the SDK reads the other branch.
    const [forSdk, forCheck] = response.body.tee();
    const replay = { lastEventId, status: response.status, text: new Response(forCheck).text() };
    wire.replays.push(replay);
    return new Response(forSdk, { status: response.status, statusText: response.statusText, headers: response.headers });
  }
  return response;
}

const posted = (method) => wire.requests.filter((r) => r.method === 'POST' && r.body?.method === method);

// --- the checks ---
const names = [
  'connect (initialize, session, 2025-11-25)',
  'tools/list',
  'tools/call reports resumption tokens: the priming id, then the answer\'s',
  'ping on its own stream (other event ids)',
  'resume the tools/call stream (GET, Last-Event-ID = its priming id) -> the same result',
  'the replay carried only the tools/call answer',
];

const transport = new StreamableHTTPClientTransport(new URL(MCP_URL), { fetch: recordingFetch });
const client = new Client({ name: 'sluice-interop-ts', version: '1.0.0' });
const callTokens = [];
const pingTokens = [];
let firstResult;
let callId;
let pingId;

const connected = await check(names[0], async () => {
  await client.connect(transport);
  expect(transport.sessionId, 'initialize minted no Mcp-Session-Id');
  expect(transport.protocolVersion === HANDSHAKE_LATEST, `negotiated ${transport.protocolVersion}`);
  expect(client.getServerVersion()?.name, 'no serverInfo');
});

if (!connected) {
  skipRest(names.slice(1), 'no connection');
} else {
  await check(names[1], async () => {
    const listed = await client.listTools();
    const got = listed.tools.map((t) => t.name);
    expect(TOOLS.every((t) => got.includes(t)), `tools/list lacks some of ${TOOLS}: ${got}`);
  });

  const called = await check(names[2], async () => {
    firstResult = await client.request(
      { method: 'tools/call', params: { name: 'get_customer', arguments: { id: 'c-100' } } },
      CallToolResultSchema,
      { onresumptiontoken: (token) => callTokens.push(token) },
    );
    const calls = posted('tools/call');
    expect(calls.length === 1, `${calls.length} tools/call POSTs`);
    callId = calls[0].body.id;
    expect(calls[0].contentType.startsWith('text/event-stream'), `tools/call answered as ${calls[0].contentType}`);
    expect(!firstResult.isError && same(firstResult.structuredContent, ADA), `result ${JSON.stringify(firstResult)}`);
    expect(callTokens.length === 2, `tokens ${callTokens}, want the priming id and the answer's id`);
    expect(new Set(callTokens.map(streamOf)).size === 1, `tokens of more than one stream: ${callTokens}`);
  });

  if (!called) {
    skipRest(names.slice(3), 'no resumption token');
  } else {
    await check(names[3], async () => {
      await client.request({ method: 'ping' }, EmptyResultSchema, { onresumptiontoken: (t) => pingTokens.push(t) });
      pingId = posted('ping').at(-1)?.body?.id;
      expect(pingTokens.length > 0, 'the ping\'s stream reported no token');
      const callStream = streamOf(callTokens[0]);
      expect(pingTokens.every((t) => streamOf(t) !== callStream), `ping tokens ${pingTokens} share ${callStream}`);
    });

    const resumed = await check(names[4], async () => {
      const before = wire.requests.length;
      const result = await client.request(
        { method: 'tools/call', params: { name: 'get_customer', arguments: { id: 'c-100' } } },
        CallToolResultSchema,
        { resumptionToken: callTokens[0] },
      );
      expect(same(result, firstResult), `resumed ${JSON.stringify(result)}, want ${JSON.stringify(firstResult)}`);
      const sent = wire.requests.slice(before);
      const gets = sent.filter((r) => r.method === 'GET' && r.headers.get('last-event-id') === callTokens[0]);
      expect(gets.length === 1, `GETs with Last-Event-ID ${callTokens[0]}: ${gets.length}`);
      expect(gets[0].status === 200 && gets[0].contentType.startsWith('text/event-stream'),
        `the resumption GET answered ${gets[0].status} ${gets[0].contentType}`);
      expect(gets[0].headers.get('mcp-session-id') === transport.sessionId, 'the resumption GET lacks the session id');
      expect(!sent.some((r) => r.method === 'POST'), 'resuming POSTed the request again');
    });

    if (!resumed) {
      skipRest(names.slice(5), 'no resumed result');
    } else {
      await check(names[5], async () => {
        const replay = wire.replays.find((r) => r.lastEventId === callTokens[0]);
        expect(replay, 'no replay body recorded');
        const text = await replay.text; // the stream's end: sluice closes a replay of a finished stream
        const messages = parseSse(text).filter((e) => e.data).map((e) => ({ id: e.id, message: JSON.parse(e.data) }));
        expect(messages.length === 1, `replay of ${messages.length} messages, want 1: ${text}`);
        const [{ id, message }] = messages;
        expect(id === callTokens.at(-1), `replayed event id ${id}, want ${callTokens.at(-1)}`);
        expect(message.id === callId, `replayed the answer to id ${message.id}, want ${callId}`);
        expect(message.id !== pingId, 'the ping\'s answer was replayed');
        expect(same(message.result, firstResult), `replayed result ${JSON.stringify(message.result)}`);
      });
    }
  }
}

try {
  await client.close();
} catch {
  // closing is not a check
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
