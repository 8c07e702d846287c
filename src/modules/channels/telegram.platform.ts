import type { Platform } from './inbound.ts';
import { pace } from './inbound.ts';
import {
  parseTelegramUpdate,
  splitMessage,
  TELEGRAM_MAX_CHARS,
  TelegramError,
  type TelegramUpdate,
  telegramCall,
  toTelegramHtml,
} from './telegram.ts';

/** The longest `retry_after` waited for in the job; a longer one fails the attempt and the job retries later. */
const MAX_RETRY_AFTER_S = 60;
const BOT_INTERVAL_MS = 35;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sends, waiting out Telegram's 429s (`retry_after`) a few times. */
async function withRetryAfter<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      const wait = err instanceof TelegramError && err.code === 429 ? err.retryAfter : undefined;
      if (wait === undefined || wait > MAX_RETRY_AFTER_S || attempt >= 4) throw err;
      await sleep(wait * 1000);
    }
  }
}

const PARSE_ERROR = /can't parse|parse entities|unsupported start tag|unexpected end tag/i;

export const telegramPlatform: Platform = {
  maxChars: TELEGRAM_MAX_CHARS,
  split: (text) => splitMessage(text, TELEGRAM_MAX_CHARS),
  parse: (channel, payload) => parseTelegramUpdate(channel.config, payload as TelegramUpdate),
  linkHint:
    'Hello! This bot answers linked accounts only. Open the channel in your account (Messaging channels), choose "Link account" and follow the link.',
  async send(deps, channel, secrets, chatId, text) {
    const cfg = deps.config.channels;
    const token = secrets.botToken ?? '';
    const sendAs = async (body: Record<string, unknown>) => {
      await pace(channel.id, chatId, cfg.sendIntervalMs, BOT_INTERVAL_MS);
      await telegramCall(cfg, token, 'sendMessage', { chat_id: chatId, ...body });
    };
    try {
      await withRetryAfter(() => sendAs({ text: toTelegramHtml(text), parse_mode: 'HTML' }));
    } catch (err) {
      // Markup Telegram cannot read: the same words as plain text.
      if (!(err instanceof TelegramError && err.code === 400 && PARSE_ERROR.test(err.message))) throw err;
      await withRetryAfter(() => sendAs({ text }));
    }
  },
  async typing(deps, _channel, secrets, msg) {
    await telegramCall(deps.config.channels, secrets.botToken ?? '', 'sendChatAction', {
      chat_id: msg.chatId,
      action: 'typing',
    });
  },
};
