/**
 * The chat page's script (`GET /assets/agent-chat.js`): progressive enhancement of the message form. It posts
 * the same form fields (CSRF token included) to `data-stream`, which answers Server-Sent Events from the same
 * agent chat as the API: `conversation` {conversationId, url}, `delta` {text}, `tool.called` {name, arguments},
 * `tool.result` {name, content}, then `done` {url, ...} or `error` {message, url?}. Text and tool steps are
 * shown as they arrive; at the end the page's content is replaced by the conversation's page as the server
 * renders it, at its URL, so what is shown is what a reload shows. Without JavaScript the form posts as before.
 * A refusal (402 no credits, 429, an expired form) shows its message and gives the draft back.
 * Served compiled to ES2017 (assets.ts), no dependency, no inline script (the page's CSP allows only
 * same-origin scripts).
 */

/** What the stream's events carry (each field only on the events that have it). */
interface ChatEvent {
  conversationId?: string;
  url?: string;
  text?: string;
  name?: string;
  arguments?: unknown;
  content?: unknown;
  message?: string;
}

interface StreamState {
  url: string;
  error: string;
  done: boolean;
  bubble: HTMLElement | null;
}

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string,
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function clearError(): void {
  document.getElementById('chat-error')?.remove();
}

function showError(message: string): void {
  clearError();
  const form = document.querySelector('form[data-stream]');
  if (!form?.parentNode) return;
  const p = el('p', 'error', message);
  p.id = 'chat-error';
  p.setAttribute('role', 'alert');
  form.parentNode.insertBefore(p, form);
}

const REFUSALS: Record<number, string> = {
  401: 'You are signed out: reload the page and sign in again.',
  402: 'Your credit balance is used up: add credits to chat.',
  429: 'Too many messages at once: wait a minute and try again.',
};

/** The refusal's own message (a §7 body), else what its status means. */
async function messageOf(res: Response): Promise<string> {
  const fallback = REFUSALS[res.status] ?? `The message could not be sent (${res.status}). Try again.`;
  try {
    const body: unknown = await res.json();
    const message = typeof body === 'object' && body !== null ? (body as { message?: unknown }).message : undefined;
    return typeof message === 'string' && message ? message : fallback;
  } catch {
    return fallback;
  }
}

/** Reads Server-Sent Events from `stream`, handing each event with a JSON payload to `handle`. */
async function readEvents(
  stream: ReadableStream<Uint8Array>,
  handle: (event: string, data: ChatEvent) => void,
): Promise<void> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const chunk = await reader.read();
    if (chunk.done) return;
    buffer += decoder.decode(chunk.value, { stream: true });
    let end = buffer.indexOf('\n\n');
    while (end >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf('\n\n');
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.indexOf('event:') === 0) event = line.slice(6).trim();
        else if (line.indexOf('data:') === 0) data.push(line.slice(line.charAt(5) === ' ' ? 6 : 5));
      }
      if (!data.length) continue;
      let payload: ChatEvent;
      try {
        payload = JSON.parse(data.join('\n')) as ChatEvent;
      } catch {
        continue;
      }
      handle(event, payload);
    }
  }
}

/** The conversation's page as the server renders it, in place of this one's content. */
async function refresh(url: string): Promise<void> {
  try {
    const res = await fetch(url, { credentials: 'same-origin', headers: { accept: 'text/html' } });
    const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
    const fresh = doc.querySelector('main');
    const main = document.querySelector('main');
    if (!res.ok || !fresh || !main) throw new Error('no page');
    document.title = doc.title;
    main.replaceChildren(...Array.prototype.slice.call(fresh.childNodes));
    history.replaceState(null, '', url);
    bind();
    document.querySelector<HTMLTextAreaElement>('form[data-stream] textarea')?.focus();
  } catch {
    location.assign(url);
  }
}

async function send(form: HTMLFormElement): Promise<void> {
  const box = form.querySelector<HTMLTextAreaElement>('textarea[name=message]');
  const button = form.querySelector<HTMLButtonElement>('button[type=submit]');
  const log = document.querySelector('ol.chat');
  if (!box || !button || !log) return;
  const text = box.value.trim();
  if (!text) return showError('Write a message first.');
  const body = new URLSearchParams();
  new FormData(form).forEach((value, key) => {
    if (typeof value === 'string') body.append(key, value);
  });
  clearError();
  const mine = el('li', 'msg user');
  mine.appendChild(el('span', 'who', 'You'));
  mine.appendChild(el('div', '', text));
  log.appendChild(mine);
  box.value = '';
  button.disabled = true;
  log.setAttribute('aria-busy', 'true');
  // Until the answer's first words arrive, the agent's turn says that work is under way (a slow model, a tool).
  let waiting: HTMLElement | null = el('li', 'msg assistant waiting');
  waiting.setAttribute('role', 'status');
  waiting.appendChild(el('span', 'who', 'Agent'));
  waiting.appendChild(el('div', 'small muted', 'Working on it\u2026'));
  log.appendChild(waiting);
  const settle = () => {
    waiting?.remove();
    waiting = null;
  };
  const state: StreamState = { url: '', error: '', done: false, bubble: null };
  const handle = (event: string, data: ChatEvent) => {
    if (event === 'delta' || event === 'done' || event === 'error') settle();
    if (event === 'conversation') {
      state.url = data.url ?? '';
      history.replaceState(null, '', state.url);
      if (!form.querySelector('input[name=conversationId]')) {
        const hidden = el('input');
        hidden.type = 'hidden';
        hidden.name = 'conversationId';
        hidden.value = data.conversationId ?? '';
        form.appendChild(hidden);
      }
    } else if (event === 'delta') {
      if (!state.bubble) {
        const item = el('li', 'msg assistant streaming');
        item.appendChild(el('span', 'who', 'Agent'));
        state.bubble = item.appendChild(el('div', 'text', ''));
        log.appendChild(item);
      }
      state.bubble.textContent += data.text ?? '';
    } else if (event === 'tool.called') {
      state.bubble = null;
      const step = el('li', 'msg tool');
      const line = step.appendChild(el('div', 'small muted', 'Called '));
      line.appendChild(el('code', '', data.name ?? ''));
      line.appendChild(document.createTextNode(' '));
      line.appendChild(el('code', '', String(data.arguments || '').slice(0, 300)));
      log.appendChild(step);
      if (waiting) log.appendChild(waiting);
    } else if (event === 'tool.result') {
      state.bubble = null;
      const result = el('li', 'msg tool');
      const details = result.appendChild(el('details'));
      details.appendChild(el('summary', '', `Tool result: ${data.name || 'tool'}`));
      details.appendChild(el('pre', 'small', String(data.content || '').slice(0, 2000)));
      log.appendChild(result);
      if (waiting) log.appendChild(waiting);
    } else if (event === 'done') {
      state.done = true;
      state.url = data.url || state.url;
    } else if (event === 'error') {
      state.error = data.message || 'The agent could not answer.';
      state.url = data.url || state.url;
    }
  };
  try {
    const res = await fetch(form.dataset.stream ?? '', {
      method: 'POST',
      body,
      credentials: 'same-origin',
      headers: { accept: 'text/event-stream' },
    });
    if (!res.ok || !res.body || (res.headers.get('content-type') || '').indexOf('text/event-stream') !== 0) {
      settle();
      mine.remove();
      box.value = text;
      button.disabled = false;
      log.removeAttribute('aria-busy');
      return showError(await messageOf(res));
    }
    await readEvents(res.body, handle);
    settle();
    if (!state.done && !state.error) state.error = 'The answer broke off. What was saved is shown.';
  } catch {
    settle();
    state.error = 'The connection broke off. What was saved is shown.';
  }
  // The form stays disabled until the page is the conversation's; what was typed meanwhile is kept.
  const typed = box.value;
  if (state.url) await refresh(state.url);
  const fresh = document.querySelector<HTMLTextAreaElement>('form[data-stream] textarea[name=message]');
  if (fresh && typed && !fresh.value) fresh.value = typed;
  button.disabled = false;
  log.removeAttribute('aria-busy');
  if (state.error) showError(state.error);
}

function bind(): void {
  const form = document.querySelector<HTMLFormElement>('form[data-stream]');
  if (!form) return;
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (form.getAttribute('aria-busy') === 'true') return;
    form.setAttribute('aria-busy', 'true');
    const release = () => form.removeAttribute('aria-busy');
    void send(form).then(release, release);
  });
}

// An older browser keeps the form's own POST.
if (['fetch', 'ReadableStream', 'TextDecoder', 'DOMParser', 'URLSearchParams'].every((name) => name in window)) bind();
