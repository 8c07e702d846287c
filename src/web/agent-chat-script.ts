import { createHash } from 'node:crypto';

/**
 * The chat page's script (`GET /assets/agent-chat.js`): progressive enhancement of the message form. It posts
 * the same form fields (CSRF token included) to `data-stream`, which answers Server-Sent Events from the same
 * agent chat as the API: `conversation` {conversationId, url}, `delta` {text}, `tool.called` {name, arguments},
 * `tool.result` {name, content}, then `done` {url, ...} or `error` {message, url?}. Text and tool steps are
 * shown as they arrive; at the end the page's content is replaced by the conversation's page as the server
 * renders it, at its URL, so what is shown is what a reload shows. Without JavaScript the form posts as before.
 * A refusal (402 no credits, 429, an expired form) shows its message and gives the draft back.
 * Plain ES2017, no dependency, no inline script (the page's CSP allows only same-origin scripts).
 */
export const AGENT_CHAT_JS = `(function () {
  'use strict';
  if (!window.fetch || !window.ReadableStream || !window.TextDecoder || !window.DOMParser || !window.URLSearchParams) return;

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function clearError() {
    var old = document.getElementById('chat-error');
    if (old) old.remove();
  }

  function showError(message) {
    clearError();
    var form = document.querySelector('form[data-stream]');
    if (!form) return;
    var p = el('p', 'error', message);
    p.id = 'chat-error';
    p.setAttribute('role', 'alert');
    form.parentNode.insertBefore(p, form);
  }

  async function messageOf(res) {
    var fallback = {
      401: 'You are signed out: reload the page and sign in again.',
      402: 'Your credit balance is used up: add credits to chat.',
      429: 'Too many messages at once: wait a minute and try again.'
    }[res.status] || 'The message could not be sent (' + res.status + '). Try again.';
    try {
      var body = await res.json();
      return (body && typeof body.message === 'string' && body.message) || fallback;
    } catch (e) {
      return fallback;
    }
  }

  async function readEvents(stream, handle) {
    var reader = stream.getReader();
    var decoder = new TextDecoder();
    var buffer = '';
    for (;;) {
      var chunk = await reader.read();
      if (chunk.done) return;
      buffer += decoder.decode(chunk.value, { stream: true });
      var end;
      while ((end = buffer.indexOf('\\n\\n')) >= 0) {
        var block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        var event = 'message';
        var data = [];
        block.split('\\n').forEach(function (line) {
          if (line.indexOf('event:') === 0) event = line.slice(6).trim();
          else if (line.indexOf('data:') === 0) data.push(line.slice(line.charAt(5) === ' ' ? 6 : 5));
        });
        if (!data.length) continue;
        var payload;
        try { payload = JSON.parse(data.join('\\n')); } catch (e) { continue; }
        handle(event, payload);
      }
    }
  }

  /** The conversation's page as the server renders it, in place of this one's content. */
  async function refresh(url) {
    try {
      var res = await fetch(url, { credentials: 'same-origin', headers: { accept: 'text/html' } });
      var doc = new DOMParser().parseFromString(await res.text(), 'text/html');
      var fresh = doc.querySelector('main');
      var main = document.querySelector('main');
      if (!res.ok || !fresh || !main) throw new Error('no page');
      document.title = doc.title;
      main.replaceChildren.apply(main, Array.prototype.slice.call(fresh.childNodes));
      history.replaceState(null, '', url);
      bind();
      var box = document.querySelector('form[data-stream] textarea');
      if (box) box.focus();
    } catch (e) {
      location.assign(url);
    }
  }

  async function send(form) {
    var box = form.querySelector('textarea[name=message]');
    var button = form.querySelector('button[type=submit]');
    var log = document.querySelector('ol.chat');
    var text = box.value.trim();
    if (!text) return showError('Write a message first.');
    var body = new URLSearchParams(new FormData(form));
    clearError();
    var mine = el('li', 'msg user');
    mine.appendChild(el('span', 'who', 'You'));
    mine.appendChild(el('div', '', text));
    log.appendChild(mine);
    box.value = '';
    button.disabled = true;
    log.setAttribute('aria-busy', 'true');
    // Until the answer's first words arrive, the agent's turn says that work is under way (a slow model, a tool).
    var waiting = el('li', 'msg assistant waiting');
    waiting.setAttribute('role', 'status');
    waiting.appendChild(el('span', 'who', 'Agent'));
    waiting.appendChild(el('div', 'small muted', 'Working on it\u2026'));
    log.appendChild(waiting);
    function settle() {
      if (waiting) waiting.remove();
      waiting = null;
    }
    var state = { url: '', error: '', done: false, bubble: null };
    function handle(event, data) {
      if (event === 'delta' || event === 'done' || event === 'error') settle();
      if (event === 'conversation') {
        state.url = data.url;
        history.replaceState(null, '', data.url);
        if (!form.querySelector('input[name=conversationId]')) {
          var hidden = el('input');
          hidden.type = 'hidden';
          hidden.name = 'conversationId';
          hidden.value = data.conversationId;
          form.appendChild(hidden);
        }
      } else if (event === 'delta') {
        if (!state.bubble) {
          var item = el('li', 'msg assistant streaming');
          item.appendChild(el('span', 'who', 'Agent'));
          state.bubble = item.appendChild(el('div', 'text', ''));
          log.appendChild(item);
        }
        state.bubble.textContent += data.text;
      } else if (event === 'tool.called') {
        state.bubble = null;
        var step = el('li', 'msg tool');
        var line = step.appendChild(el('div', 'small muted', 'Called '));
        line.appendChild(el('code', '', data.name));
        line.appendChild(document.createTextNode(' '));
        line.appendChild(el('code', '', String(data.arguments || '').slice(0, 300)));
        log.appendChild(step);
        if (waiting) log.appendChild(waiting);
      } else if (event === 'tool.result') {
        state.bubble = null;
        var result = el('li', 'msg tool');
        var details = result.appendChild(el('details'));
        details.appendChild(el('summary', '', 'Tool result: ' + (data.name || 'tool')));
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
    }
    try {
      var res = await fetch(form.dataset.stream, {
        method: 'POST',
        body: body,
        credentials: 'same-origin',
        headers: { accept: 'text/event-stream' }
      });
      if (!res.ok || (res.headers.get('content-type') || '').indexOf('text/event-stream') !== 0) {
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
    } catch (e) {
      settle();
      state.error = 'The connection broke off. What was saved is shown.';
    }
    // The form stays disabled until the page is the conversation's; what was typed meanwhile is kept.
    var typed = box.value;
    if (state.url) await refresh(state.url);
    var fresh = document.querySelector('form[data-stream] textarea[name=message]');
    if (fresh && typed && !fresh.value) fresh.value = typed;
    button.disabled = false;
    log.removeAttribute('aria-busy');
    if (state.error) showError(state.error);
  }

  function bind() {
    var form = document.querySelector('form[data-stream]');
    if (!form) return;
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      if (form.getAttribute('aria-busy') === 'true') return;
      form.setAttribute('aria-busy', 'true');
      send(form).finally(function () { form.removeAttribute('aria-busy'); });
    });
  }

  bind();
})();
`;

/** Where pages load it from: the version in the query changes with the script, so browsers may keep it a day. */
export const AGENT_CHAT_JS_PATH = `/assets/agent-chat.js?v=${createHash('sha256').update(AGENT_CHAT_JS).digest('hex').slice(0, 12)}`;
