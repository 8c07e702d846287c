import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fake Telegram Bot API on loopback (`TELEGRAM_API_URL`): bots by token, getMe, setWebhook/deleteWebhook,
 * sendMessage (which refuses bad HTML as Telegram does, and texts over 4096 characters) and sendChatAction.
 * Tests read what was sent and script faults (a 429 with `retry_after`).
 */
export interface FakeTelegramCall {
  token: string;
  method: string;
  body: Record<string, unknown>;
  at: number;
  /** The HTTP status answered. */
  status: number;
}

export interface FakeTelegram {
  url: string;
  /** Makes a bot: answers its token. */
  addBot(id: number, username: string): string;
  /** The webhook a bot registered, if any. */
  webhooks: Map<string, { url: string; secret_token: string }>;
  calls: FakeTelegramCall[];
  /** Messages sent (sendMessage), in order. */
  sent(): { chatId: string; text: string; parseMode: string | undefined; at: number }[];
  /** The next sendMessage calls answer these faults instead, in order. */
  failNextSends(...faults: { status: number; description: string; retryAfter?: number }[]): void;
  reset(): void;
  close(): Promise<void>;
}

const TAG = /<\/?([a-z]+)[^>]*>/gi;
const ALLOWED = new Set(['b', 'strong', 'i', 'em', 'u', 's', 'code', 'pre', 'a', 'blockquote', 'tg-spoiler']);

/** Whether Telegram's HTML mode would take the text: known tags, balanced, and `<`/`&` escaped elsewhere. */
function parsesAsHtml(text: string): boolean {
  const stack: string[] = [];
  for (const m of text.matchAll(TAG)) {
    const name = (m[1] ?? '').toLowerCase();
    if (!ALLOWED.has(name)) return false;
    if (m[0].startsWith('</')) {
      if (stack.pop() !== name) return false;
    } else stack.push(name);
  }
  const stripped = text.replace(TAG, '');
  if (/<|>/.test(stripped)) return false;
  return stack.length === 0 && !/&(?!(amp|lt|gt|quot);)/.test(stripped);
}

export async function startFakeTelegram(): Promise<FakeTelegram> {
  const bots = new Map<string, { id: number; username: string }>();
  const faults: { status: number; description: string; retryAfter?: number }[] = [];
  let next = 1;
  const fake: FakeTelegram = {
    url: '',
    webhooks: new Map(),
    calls: [],
    addBot(id, username) {
      const token = `${id}:AAfake${next++}${Math.random().toString(36).slice(2, 12)}`;
      bots.set(token, { id, username });
      return token;
    },
    sent: () =>
      fake.calls
        .filter((c) => c.method === 'sendMessage' && c.status === 200)
        .map((c) => ({
          chatId: String(c.body.chat_id),
          text: String(c.body.text),
          parseMode: c.body.parse_mode as string | undefined,
          at: c.at,
        })),
    failNextSends: (...f) => faults.push(...f),
    reset() {
      fake.calls.length = 0;
      faults.length = 0;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };

  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const m = /^\/bot([^/]+)\/(\w+)$/.exec(req.url ?? '');
    if (!m) return json(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
    const token = decodeURIComponent(m[1] ?? '');
    const method = m[2] ?? '';
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
    const bot = bots.get(token);
    if (!bot) return json(res, 401, { ok: false, error_code: 401, description: 'Unauthorized' });
    const record: FakeTelegramCall = { token, method, body, at: Date.now(), status: 200 };
    fake.calls.push(record);
    const reply = res.writeHead.bind(res);
    res.writeHead = ((status: number, ...rest: unknown[]) => {
      record.status = status;
      return (reply as (...a: unknown[]) => ServerResponse)(status, ...rest);
    }) as typeof res.writeHead;
    switch (method) {
      case 'getMe':
        return ok(res, { id: bot.id, is_bot: true, first_name: bot.username, username: bot.username });
      case 'setWebhook':
        fake.webhooks.set(token, { url: String(body.url), secret_token: String(body.secret_token) });
        return ok(res, true);
      case 'deleteWebhook':
        fake.webhooks.delete(token);
        return ok(res, true);
      case 'sendChatAction':
        return ok(res, true);
      case 'sendMessage': {
        const fault = faults.shift();
        if (fault) {
          return json(res, fault.status, {
            ok: false,
            error_code: fault.status,
            description: fault.description,
            ...(fault.retryAfter !== undefined ? { parameters: { retry_after: fault.retryAfter } } : {}),
          });
        }
        const text = String(body.text ?? '');
        const visible = body.parse_mode === 'HTML' ? text.replace(TAG, '') : text;
        if (visible.length > 4096 || !text) {
          return json(res, 400, { ok: false, error_code: 400, description: 'Bad Request: message is too long' });
        }
        if (body.parse_mode === 'HTML' && !parsesAsHtml(text)) {
          return json(res, 400, {
            ok: false,
            error_code: 400,
            description: "Bad Request: can't parse entities: unsupported start tag",
          });
        }
        return ok(res, { message_id: fake.calls.length, chat: { id: body.chat_id }, text });
      }
      default:
        return json(res, 404, { ok: false, error_code: 404, description: 'Not Found: method not found' });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}

function ok(res: ServerResponse, result: unknown) {
  json(res, 200, { ok: true, result });
}

function json(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
