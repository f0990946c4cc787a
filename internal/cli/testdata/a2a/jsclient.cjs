// jsclient.cjs drives `mew agent a2a` with the official JavaScript SDK's
// client (@a2a-js/sdk, found through NODE_PATH) and prints one JSON line
// per step, in the A2A JSON form (the SDK's own toJSON), for the Go test
// to check. Usage: node jsclient.cjs BASE_URL TOKEN
'use strict';
const { ClientFactory, JsonRpcTransportFactory, DefaultAgentCardResolver } = require('@a2a-js/sdk/client');
const { Task, StreamResponse, Role, AgentCard } = require('@a2a-js/sdk');

const [base, token] = process.argv.slice(2);
const authFetch = (url, init = {}) =>
  fetch(url, { ...init, headers: { ...(init.headers || {}), Authorization: `Bearer ${token}` } });
const out = (step, value) => process.stdout.write(JSON.stringify({ step, value }) + '\n');
let n = 0;
const message = (text, metadata, taskId) => ({
  messageId: `js-${++n}`,
  role: Role.ROLE_USER,
  parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
  metadata,
  taskId: taskId || '',
  contextId: '',
  extensions: [],
  referenceTaskIds: [],
});

async function main() {
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: authFetch }),
  });
  const resolver = new DefaultAgentCardResolver({ fetchImpl: authFetch });
  out('card', AgentCard.toJSON(await resolver.resolve(base)));
  const client = await factory.createFromUrl(base);

  const sent = await client.sendMessage({ message: message('rain', { skillId: 'haiku' }) });
  out('send', Task.toJSON(sent));

  const events = [];
  for await (const ev of client.sendMessageStream({ message: message('snow', { skillId: 'haiku' }) })) {
    events.push(StreamResponse.toJSON(ev));
  }
  out('stream', events);

  out('get', Task.toJSON(await client.getTask({ id: sent.id })));

  const slow = await client.sendMessage({
    message: message('fog', { skillId: 'haiku' }),
    configuration: { acceptedOutputModes: [], returnImmediately: true },
  });
  out('cancel', Task.toJSON(await client.cancelTask({ id: slow.id })));

  try {
    await client.getTask({ id: 'no-such-task' });
    out('missing', 'found');
  } catch (e) {
    out('missing', { name: e.constructor.name, message: String(e.message) });
  }
}

main().catch((e) => {
  process.stderr.write(`jsclient: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
