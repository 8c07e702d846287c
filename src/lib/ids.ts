import { hash, randomBytes, randomFillSync } from 'node:crypto';

/** Type prefixes of every id and token; one place so a prefix is never reused for two kinds. */
export const ID_PREFIX = {
  account: 'acc',
  session: 'ses',
  pat: 'tok',
  creditTransaction: 'ctx',
  creditHold: 'hold',
  completion: 'chatcmpl',
  request: 'req',
  authClient: 'app',
  signingKey: 'key',
  connection: 'conn',
  /** OAuth `state` of a connection being authorized (a secret: only its hash is stored). */
  oauthState: 'ost',
  /** Id of a connection awaiting its finalize fields (a secret: only its hash is stored). */
  pendingConnection: 'pcn',
  job: 'job',
  agent: 'agt',
  conversation: 'conv',
  message: 'msg',
  /** A chat turn being answered (its lease row). */
  conversationRun: 'crun',
  memory: 'mem',
  chatFile: 'file',
  knowledgeBase: 'kb',
  knowledgePage: 'kpg',
  knowledgePageVersion: 'kpv',
  knowledgeSource: 'ksrc',
  knowledgeLog: 'klog',
  messagingChannel: 'mch',
  webchatVisitor: 'wcv',
  customTool: 'tool',
  skill: 'skl',
  scheduledTask: 'task',
  scheduledTaskRun: 'trun',
  /** A task-augmented MCP tools/call (its id is the protocol's taskId). */
  mcpTask: 'mtask',
  activity: 'act',
  webhookEndpoint: 'wh',
  /** One event for one webhook endpoint; its id is the `webhook-id` header. */
  webhookDelivery: 'whmsg',
} as const;

export type IdKind = keyof typeof ID_PREFIX;

// Ids are minted on every request: draw their randomness from a pooled buffer, one system call per 256 ids.
const pool = Buffer.allocUnsafe(4096);
let offset = pool.length;

/** A random, URL-safe id with its type prefix: `acc_` + 128 bits in base64url. */
export function newId(kind: IdKind): string {
  if (offset + 16 > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const id = pool.toString('base64url', offset, offset + 16);
  offset += 16;
  return `${ID_PREFIX[kind]}_${id}`;
}

/** Bearer secrets: `pat_` / `sess_` + 256 random bits. Only their SHA-256 is ever stored. */
export function newSecretToken(prefix: 'pat' | 'sess'): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}

/**
 * SHA-256 in hex. Node's one-shot `hash` (20.12 and later), not a `createHash` object (a stream), which is slower:
 * a bearer token is hashed on every request to find it in the token cache (docs/gateway-speed.md).
 */
export function sha256Hex(value: string): string {
  return hash('sha256', value, 'hex');
}
