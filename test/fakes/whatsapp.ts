import { createHmac } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fake WhatsApp Cloud (Graph) API on loopback (`WHATSAPP_API_URL`): `POST /<version>/<phoneNumberId>/messages`
 * with the number's access token. Tests read what was sent, script faults, and build signed deliveries.
 */
export interface FakeWhatsapp {
  url: string;
  version: string;
  /** Registers a number and the access token it takes. */
  addNumber(phoneNumberId: string, accessToken: string): void;
  sent: { phoneNumberId: string; to: string; text: string }[];
  /** Messages marked read, with the typing indicator asked for or not. */
  reads: { messageId: string; typing: boolean }[];
  failNextSends(...faults: { status: number; message: string; code?: number }[]): void;
  reset(): void;
  close(): Promise<void>;
}

export async function startFakeWhatsapp(version = 'v21.0'): Promise<FakeWhatsapp> {
  const numbers = new Map<string, string>();
  const faults: { status: number; message: string; code?: number }[] = [];
  const fake: FakeWhatsapp = {
    url: '',
    version,
    addNumber: (id, token) => numbers.set(id, token),
    sent: [],
    reads: [],
    failNextSends: (...f) => faults.push(...f),
    reset() {
      fake.sent.length = 0;
      fake.reads.length = 0;
      faults.length = 0;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const m = new RegExp(`^/${version.replace('.', '\\.')}/(\\d+)/messages$`).exec(req.url ?? '');
    if (req.method !== 'POST' || !m) return json(res, 404, { error: { message: 'Unknown path', code: 100 } });
    const id = m[1] ?? '';
    if (!numbers.has(id) || req.headers.authorization !== `Bearer ${numbers.get(id)}`) {
      return json(res, 401, { error: { message: 'Invalid OAuth access token', code: 190 } });
    }
    const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
    if (parsed.status === 'read') {
      if (parsed.messaging_product !== 'whatsapp' || typeof parsed.message_id !== 'string') {
        return json(res, 400, { error: { message: 'Invalid parameter', code: 100 } });
      }
      fake.reads.push({ messageId: parsed.message_id, typing: parsed.typing_indicator !== undefined });
      return json(res, 200, { success: true });
    }
    const fault = faults.shift();
    if (fault) return json(res, fault.status, { error: { message: fault.message, code: fault.code ?? 0 } });
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as {
      messaging_product?: string;
      to?: string;
      type?: string;
      text?: { body?: string };
    };
    const text = body.text?.body ?? '';
    if (body.messaging_product !== 'whatsapp' || body.type !== 'text' || !text || text.length > 4096) {
      return json(res, 400, { error: { message: 'Invalid parameter', code: 100 } });
    }
    fake.sent.push({ phoneNumberId: id, to: String(body.to), text });
    return json(res, 200, {
      messaging_product: 'whatsapp',
      contacts: [{ input: body.to, wa_id: body.to }],
      messages: [{ id: `wamid.${fake.sent.length}` }],
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}

/** A Cloud API delivery of text messages to `phoneNumberId`, as Meta sends it. */
export function whatsappDelivery(
  phoneNumberId: string,
  messages: { id: string; from: string; text: string; name?: string }[],
): Record<string, unknown> {
  return {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: 'WABA_ID',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '15550000000', phone_number_id: phoneNumberId },
              contacts: messages.map((m) => ({ wa_id: m.from, profile: { name: m.name ?? 'Ada' } })),
              messages: messages.map((m) => ({
                from: m.from,
                id: m.id,
                timestamp: String(Math.floor(Date.now() / 1000)),
                type: 'text',
                text: { body: m.text },
              })),
            },
          },
        ],
      },
    ],
  };
}

/** A status-only delivery (sent/delivered/read receipts). */
export function whatsappStatuses(phoneNumberId: string): Record<string, unknown> {
  return {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: 'WABA_ID',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '15550000000', phone_number_id: phoneNumberId },
              statuses: [{ id: 'wamid.1', status: 'delivered', timestamp: '1', recipient_id: '1' }],
            },
          },
        ],
      },
    ],
  };
}

/** `sha256=<hex>` of the raw body with the app secret, as Meta signs. */
export function hubSignature(raw: string, appSecret: string): string {
  return `sha256=${createHmac('sha256', appSecret).update(raw).digest('hex')}`;
}

function json(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
