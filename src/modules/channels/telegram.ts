import type { ChannelsConfig } from '../../config.ts';

/**
 * The few Bot API methods a channel uses, over `TELEGRAM_API_URL`. The token is part of the URL, so nothing
 * here ever puts the URL into an error or a log line.
 */

export class TelegramError extends Error {
  constructor(
    message: string,
    readonly code: number,
    /** Seconds Telegram asks to wait (429). */
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = 'TelegramError';
  }
}

const TIMEOUT_MS = 15_000;

export async function telegramCall<T = unknown>(
  config: ChannelsConfig,
  botToken: string,
  method: string,
  body: Record<string, unknown> = {},
): Promise<T> {
  let res: Response;
  try {
    res = await fetch(`${config.telegramApiUrl}/bot${encodeURIComponent(botToken)}/${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch {
    throw new TelegramError(`Telegram ${method}: network error`, 0);
  }
  const json = (await res.json().catch(() => ({}))) as {
    ok?: boolean;
    result?: T;
    description?: string;
    error_code?: number;
    parameters?: { retry_after?: number };
  };
  if (!json.ok) {
    throw new TelegramError(
      `Telegram ${method}: ${String(json.description ?? res.status).slice(0, 300)}`,
      json.error_code ?? res.status,
      json.parameters?.retry_after,
    );
  }
  return json.result as T;
}

export interface TelegramBot {
  id: number;
  username: string;
}

/** Checks a bot token: answers the bot, or undefined when Telegram refuses the token. */
export async function getMe(config: ChannelsConfig, botToken: string): Promise<TelegramBot | undefined> {
  try {
    return await telegramCall<TelegramBot>(config, botToken, 'getMe');
  } catch (err) {
    if (err instanceof TelegramError && (err.code === 401 || err.code === 404)) return undefined;
    throw err;
  }
}

export const TELEGRAM_MAX_CHARS = 4096;

/** Splits text into parts of at most `max` characters: on paragraphs, then lines, then words, then anywhere. */
export function splitMessage(text: string, max = TELEGRAM_MAX_CHARS): string[] {
  const parts: string[] = [];
  let rest = text.trim();
  while (rest.length > max) {
    const window = rest.slice(0, max + 1);
    let cut = window.lastIndexOf('\n\n');
    if (cut < max / 4) cut = window.lastIndexOf('\n');
    if (cut < max / 4) cut = window.lastIndexOf(' ');
    if (cut < max / 4) cut = max;
    parts.push(rest.slice(0, cut).trimEnd());
    rest = rest.slice(cut).trimStart();
  }
  if (rest) parts.push(rest);
  return parts;
}

const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * Markdown as the model writes it, in Telegram's HTML mode: code blocks, inline code, bold, italics and
 * links; everything else escaped. Telegram refuses what it cannot parse, and the caller then sends plain text.
 */
export function toTelegramHtml(markdown: string): string {
  const blocks = markdown.split(/```/);
  return blocks
    .map((block, i) => {
      if (i % 2 === 1) return `<pre>${escapeHtml(block.replace(/^[a-z0-9]*\n/i, ''))}</pre>`;
      return escapeHtml(block)
        .replace(/`([^`\n]+)`/g, '<code>$1</code>')
        .replace(/\*\*([^*\n]+)\*\*/g, '<b>$1</b>')
        .replace(/(^|[\s(])_([^_\n]+)_(?=$|[\s).,!?])/g, '$1<i>$2</i>')
        .replace(/\[([^\]\n]+)\]\((https?:\/\/[^)\s"]+)\)/g, '<a href="$2">$1</a>');
    })
    .join('');
}

/** A Telegram update as far as a channel reads it. */
export interface TelegramUpdate {
  update_id?: number;
  message?: {
    message_id?: number;
    text?: string;
    caption?: string;
    chat?: { id?: number; type?: string };
    from?: { id?: number; first_name?: string; username?: string; is_bot?: boolean };
    reply_to_message?: { from?: { id?: number } };
  };
}

export interface TelegramMessage {
  chatId: string;
  senderId: string;
  senderName: string;
  text: string;
  isGroup: boolean;
  addressed: boolean;
  linkCode?: string | undefined;
}

/**
 * The message of an update: its text, who sent it where, whether a group addressed the bot (a mention of
 * `@username` or a reply to it; the mention is cut from the text) and a `/start CODE` link code.
 */
export function parseTelegramUpdate(
  bot: { botId?: string | undefined; botUsername?: string | undefined },
  update: TelegramUpdate,
): TelegramMessage | undefined {
  const m = update.message;
  const text = m?.text ?? m?.caption;
  if (!m || typeof text !== 'string' || m.chat?.id === undefined || m.from?.id === undefined || m.from.is_bot) {
    return undefined;
  }
  const isGroup = m.chat.type === 'group' || m.chat.type === 'supergroup';
  const mention = bot.botUsername ? new RegExp(`@${bot.botUsername}\\b`, 'gi') : undefined;
  const mentioned = mention ? mention.test(text) : false;
  const repliedTo = bot.botId !== undefined && String(m.reply_to_message?.from?.id) === bot.botId;
  const cleaned = (mention ? text.replace(mention, '') : text).trim();
  const start = /^\/start(?:@\w+)?(?:\s+(\S+))?\s*$/.exec(cleaned);
  return {
    chatId: String(m.chat.id),
    senderId: String(m.from.id),
    senderName: m.from.username ? `@${m.from.username}` : (m.from.first_name ?? ''),
    text: cleaned || text,
    isGroup,
    addressed: !isGroup || mentioned || repliedTo,
    ...(start ? { linkCode: start[1] ?? '' } : {}),
  };
}
