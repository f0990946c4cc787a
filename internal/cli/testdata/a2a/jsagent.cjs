// jsagent.cjs is an A2A 1.0 agent served by the official JavaScript SDK
// (@a2a-js/sdk's DefaultRequestHandler, jsonRpcHandler and
// agentCardHandler on express, found through NODE_PATH), shaped like the
// SDK's sample agent, for `mew bridge start --a2a-url` to join to a
// space. It streams; its skills:
//   hello     answers "Hello World! You said: '…'." after a working status
//   booking   asks "Which date?" (input-required), then answers "Booked for DATE."
//   countdown works in steps of 200 ms until canceled (or 100 steps)
// A message names its skill in metadata.skillId; without one, its text
// picks ("book…", "count…", else hello). With A2A_TOKEN set, the card asks
// for a bearer token and requests without it are refused (HTTP 401).
// Usage: node jsagent.cjs; it prints "listening URL" once it serves.
'use strict';
const crypto = require('node:crypto');
const express = require('express');
const { AgentCard, TaskState, Role } = require('@a2a-js/sdk');
const { DefaultRequestHandler, InMemoryTaskStore, AgentEvent } = require('@a2a-js/sdk/server');
const { agentCardHandler, jsonRpcHandler, UserBuilder } = require('@a2a-js/sdk/server/express');

const token = process.env.A2A_TOKEN || '';

const text = (value) => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const agentMessage = (taskId, contextId, value) => ({
  role: Role.ROLE_AGENT,
  messageId: crypto.randomUUID(),
  parts: [text(value)],
  taskId,
  contextId,
  extensions: [],
  metadata: {},
  referenceTaskIds: [],
});
const status = (taskId, contextId, state, message) =>
  AgentEvent.statusUpdate({
    taskId,
    contextId,
    status: { state, timestamp: new Date().toISOString(), message: message ? agentMessage(taskId, contextId, message) : undefined },
    metadata: {},
  });

class Executor {
  constructor() {
    this.canceled = new Set();
    this.cancelTask = async (taskId) => {
      this.canceled.add(taskId);
    };
  }

  async execute(ctx, bus) {
    const { userMessage, task, taskId, contextId } = ctx;
    const said = userMessage.parts
      .filter((p) => p.content && p.content.$case === 'text')
      .map((p) => p.content.value)
      .join('\n')
      .trim();
    let skill = (userMessage.metadata && userMessage.metadata.skillId) || '';
    if (!skill && task && task.metadata && task.metadata.skillId) skill = task.metadata.skillId;
    if (!skill) skill = /book/i.test(said) ? 'booking' : /count/i.test(said) ? 'countdown' : 'hello';
    try {
      bus.publish(
        AgentEvent.task(
          task || {
            id: taskId,
            contextId,
            status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: new Date().toISOString(), message: undefined },
            artifacts: [],
            history: [userMessage],
            metadata: { skillId: skill },
          },
        ),
      );
      if (skill === 'booking') {
        if (!task) {
          bus.publish(status(taskId, contextId, TaskState.TASK_STATE_INPUT_REQUIRED, 'Which date?'));
          return;
        }
        this.artifact(bus, taskId, contextId, `Booked for ${said}.`);
        bus.publish(status(taskId, contextId, TaskState.TASK_STATE_COMPLETED));
        return;
      }
      if (skill === 'countdown') {
        for (let step = 1; step <= 100; step++) {
          if (this.canceled.has(taskId)) {
            bus.publish(status(taskId, contextId, TaskState.TASK_STATE_CANCELED, `Canceled at step ${step}.`));
            return;
          }
          bus.publish(status(taskId, contextId, TaskState.TASK_STATE_WORKING, `Step ${step}`));
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
        this.artifact(bus, taskId, contextId, 'Liftoff.');
        bus.publish(status(taskId, contextId, TaskState.TASK_STATE_COMPLETED));
        return;
      }
      bus.publish(status(taskId, contextId, TaskState.TASK_STATE_WORKING, 'Processing your question'));
      this.artifact(bus, taskId, contextId, `Hello World! You said: '${said}'.`);
      bus.publish(status(taskId, contextId, TaskState.TASK_STATE_COMPLETED));
    } finally {
      this.canceled.delete(taskId);
    }
  }

  artifact(bus, taskId, contextId, value) {
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: { artifactId: crypto.randomUUID(), name: 'Result', description: '', parts: [text(value)], metadata: undefined, extensions: [] },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
  }
}

const app = express();
const server = app.listen(0, '127.0.0.1', () => {
  const base = `http://127.0.0.1:${server.address().port}`;
  const card = AgentCard.fromJSON({
    name: 'JS Sample Agent',
    description: 'A sample agent of the A2A JavaScript SDK.',
    version: '1.0.0',
    supportedInterfaces: [{ url: `${base}/`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    capabilities: { streaming: true, pushNotifications: false },
    securitySchemes: token ? { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } } } : {},
    securityRequirements: token ? [{ schemes: { bearer: { list: [] } } }] : [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      { id: 'hello', name: 'Hello', description: 'Answers hello.', tags: ['sample'], examples: ['hi'] },
      { id: 'booking', name: 'Booking', description: 'Books a date, asking which.', tags: ['sample'] },
      { id: 'countdown', name: 'Countdown', description: 'Counts down slowly.', tags: ['sample'] },
    ],
  });
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new Executor());
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  if (token) {
    app.use((req, res, next) => {
      if (req.get('Authorization') === `Bearer ${token}`) return next();
      res.status(401).json({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Unauthenticated' } });
    });
  }
  app.use(jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  process.stdout.write(`listening ${base}\n`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
