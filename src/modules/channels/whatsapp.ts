import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ChannelsConfig } from '../../config.ts';
import { type Platform, pace } from './inbound.ts';
import { splitMessage } from './telegram.ts';

/**
 * WhatsApp Cloud API: deliveries signed with the app secret (`X-Hub-Signature-256`), replies through the Graph
 * API (`WHATSAPP_API_URL`/`WHATSAPP_API_VERSION`). Free-form replies are allowed only within 24 hours of the
 * user's last message; outside it the delivery is recorded as failed with that reason.
 */

export const WHATSAPP_MAX_CHARS = 4096;
export const WINDOW_MS = 24 * 3600 * 1000;
const TIMEOUT_MS = 15_000;

export class WhatsappError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = 'WhatsappError';
  }
}

/** Whether `header` (`sha256=<hex>`) is the HMAC-SHA256 of the exact bytes received, compared in constant time. */
export function validSignature(raw: Buffer, header: string | undefined, appSecret: string): boolean {
  const m = /^sha256=([0-9a-f]{64})$/i.exec(header?.trim() ?? '');
  if (!m?.[1]) return false;
  const expected = createHmac('sha256', appSecret).update(raw).digest();
  const given = Buffer.from(m[1], 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export interface WhatsappInbound {
  phoneNumberId: string;
  id: string;
  from: string;
  message: Record<string, unknown>;
  name: string;
}

/** The messages of a delivery by phone number id (statuses and other changes are left out). */
export function messagesOf(payload: unknown): WhatsappInbound[] {
  const out: WhatsappInbound[] = [];
  const entries = (payload as { entry?: unknown })?.entry;
  if (!Array.isArray(entries)) return out;
  for (const entry of entries) {
    const changes = (entry as { changes?: unknown })?.changes;
    if (!Array.isArray(changes)) continue;
    for (const change of changes) {
      const value = (change as { value?: Record<string, unknown> })?.value;
      const phoneNumberId = (value?.metadata as { phone_number_id?: unknown } | undefined)?.phone_number_id;
      const messages = value?.messages;
      if (typeof phoneNumberId !== 'string' || !Array.isArray(messages)) continue;
      const contacts = Array.isArray(value?.contacts) ? (value.contacts as Record<string, unknown>[]) : [];
      for (const message of messages as Record<string, unknown>[]) {
        if (typeof message?.id !== 'string' || typeof message.from !== 'string') continue;
        const contact = contacts.find((c) => c?.wa_id === message.from);
        const name = (contact?.profile as { name?: unknown } | undefined)?.name;
        out.push({
          phoneNumberId,
          id: message.id.slice(0, 200),
          from: message.from.slice(0, 50),
          message,
          name: typeof name === 'string' ? name : '',
        });
      }
    }
  }
  return out;
}

/** One POST to the number's `messages` edge of the Graph API; a refusal throws with Meta's message and code. */
async function graphPost(
  config: ChannelsConfig,
  phoneNumberId: string,
  accessToken: string,
  body: Record<string, unknown>,
): Promise<void> {
  const url = `${config.whatsappApiUrl}/${config.whatsappApiVersion}/${encodeURIComponent(phoneNumberId)}/messages`;
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch {
    throw new WhatsappError('WhatsApp send: network error', 0);
  }
  if (res.ok) return;
  const answer = (await res.json().catch(() => ({}))) as { error?: { message?: unknown; code?: unknown } };
  throw new WhatsappError(
    `WhatsApp send: ${res.status} ${String(answer.error?.message ?? '').slice(0, 300)} (code ${String(answer.error?.code ?? '')})`,
    res.status,
  );
}

export function sendWhatsappText(
  config: ChannelsConfig,
  phoneNumberId: string,
  accessToken: string,
  to: string,
  text: string,
): Promise<void> {
  return graphPost(config, phoneNumberId, accessToken, {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to,
    type: 'text',
    text: { body: text, preview_url: false },
  });
}

const LINK = /^\s*link\s+([A-Za-z0-9]{4,40})\s*$/i;

export const whatsappPlatform: Platform = {
  maxChars: WHATSAPP_MAX_CHARS,
  split: (text) => splitMessage(text, WHATSAPP_MAX_CHARS),
  parse(_channel, payload) {
    const message = payload.message as
      | { id?: unknown; from?: unknown; type?: unknown; text?: { body?: unknown } }
      | undefined;
    const text = message?.type === 'text' ? message.text?.body : undefined;
    if (typeof message?.from !== 'string' || typeof text !== 'string' || !text.trim()) return undefined;
    const link = LINK.exec(text);
    return {
      chatId: message.from,
      senderId: message.from,
      senderName: typeof payload.name === 'string' ? payload.name : '',
      text,
      isGroup: false,
      addressed: true,
      ...(typeof message.id === 'string' ? { messageId: message.id } : {}),
      ...(link ? { linkCode: link[1] } : {}),
    };
  },
  linkHint:
    'Hello! This number answers linked accounts only. Open the channel in your account (Messaging channels), choose "Link account" and send the message it gives you.',
  async send(deps, channel, secrets, chatId, text) {
    const cfg = deps.config.channels;
    await pace(channel.id, chatId, cfg.sendIntervalMs, 0);
    await sendWhatsappText(cfg, channel.config.phoneNumberId ?? '', secrets.accessToken ?? '', chatId, text);
  },
  // Marks the message read and shows "typing…" until the reply (or 25 seconds): one call per message.
  typingOnce: true,
  async typing(deps, channel, secrets, msg) {
    if (!msg.messageId) return;
    await graphPost(deps.config.channels, channel.config.phoneNumberId ?? '', secrets.accessToken ?? '', {
      messaging_product: 'whatsapp',
      status: 'read',
      message_id: msg.messageId,
      typing_indicator: { type: 'text' },
    });
  },
  cannotSend(chat, now) {
    const last = chat?.lastInboundAt;
    if (last && now.getTime() - last.getTime() <= WINDOW_MS) return undefined;
    return last
      ? `Outside WhatsApp's 24-hour window: the user last wrote at ${last.toISOString()} (only template messages may be sent)`
      : "Outside WhatsApp's 24-hour window: the user has never written to this number";
  },
};
