/**
 * The embeddable web chat (`GET /webchat/widget.js`): a chat bubble in the page's corner that opens a small
 * panel, posts the visitor's messages to the channel and shows the reply as it streams in. It lives in a shadow
 * root, so the page's styles and its own never mix; the visitor token is kept in localStorage per channel.
 * Plain ES2017, no dependency: the page only adds `<script src="{BASE_URL}/webchat/widget.js" data-channel-id>`.
 */
export const WIDGET_JS = `(function () {
  'use strict';
  var script = document.currentScript;
  if (!script || !script.dataset.channelId) return;
  var channelId = script.dataset.channelId;
  var endpoint = new URL(script.src).origin + '/api/v1/messaging-channels/webchat/messages';
  var storeKey = 'switchboard-webchat:' + channelId;
  var title = script.dataset.title || 'Chat with us';

  function start() {
    var host = document.createElement('div');
    host.setAttribute('data-switchboard-webchat', channelId);
    document.body.appendChild(host);
    var root = host.attachShadow({ mode: 'open' });
    root.innerHTML =
      '<style>' +
      ':host{all:initial}' +
      '.bubble{position:fixed;right:20px;bottom:20px;width:56px;height:56px;border-radius:50%;border:0;background:#2563eb;color:#fff;display:flex;align-items:center;justify-content:center;cursor:pointer;box-shadow:0 4px 14px rgba(0,0,0,.25);z-index:2147483646}' +
      '.panel{position:fixed;right:20px;bottom:88px;width:340px;max-width:calc(100vw - 40px);height:440px;max-height:calc(100vh - 120px);display:flex;flex-direction:column;background:#fff;color:#111;border-radius:12px;box-shadow:0 8px 30px rgba(0,0,0,.25);font:14px/1.4 system-ui,sans-serif;z-index:2147483647;overflow:hidden}' +
      '.panel[hidden]{display:none}' +
      'header{display:flex;justify-content:space-between;align-items:center;padding:10px 14px;background:#2563eb;color:#fff;font-weight:600}' +
      'header button{background:none;border:0;color:#fff;font-size:20px;cursor:pointer}' +
      'ol{list-style:none;margin:0;padding:12px;flex:1;overflow-y:auto;display:flex;flex-direction:column;gap:8px}' +
      'li{max-width:85%;padding:8px 10px;border-radius:10px;white-space:pre-wrap;word-wrap:break-word}' +
      'li.user{align-self:flex-end;background:#2563eb;color:#fff}' +
      'li.assistant{align-self:flex-start;background:#f1f5f9}' +
      'li.error{background:#fee2e2;color:#991b1b}' +
      'form{display:flex;gap:6px;padding:10px;border-top:1px solid #e5e7eb}' +
      'input{flex:1;padding:8px;border:1px solid #cbd5e1;border-radius:8px;font:inherit}' +
      'form button{padding:8px 12px;border:0;border-radius:8px;background:#2563eb;color:#fff;font:inherit;cursor:pointer}' +
      'form button:disabled{opacity:.5}' +
      '.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}' +
      '</style>' +
      '<button class="bubble" type="button" aria-label="Open chat" aria-expanded="false">' +
      '<svg width="26" height="26" viewBox="0 0 24 24" aria-hidden="true"><path fill="currentColor" d="M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2z"/></svg></button>' +
      '<section class="panel" role="dialog" aria-label="Chat" hidden>' +
      '<header><span class="title"></span><button class="close" type="button" aria-label="Close chat">&times;</button></header>' +
      '<ol class="log" aria-live="polite"></ol>' +
      '<form><label class="sr" for="sbw-message">Message</label>' +
      '<input id="sbw-message" name="message" autocomplete="off" maxlength="4000" placeholder="Type a message" required>' +
      '<button type="submit">Send</button></form>' +
      '</section>';
    var bubble = root.querySelector('.bubble');
    var panel = root.querySelector('.panel');
    var log = root.querySelector('.log');
    var form = root.querySelector('form');
    var input = root.querySelector('input');
    var sendButton = root.querySelector('form button');
    root.querySelector('.title').textContent = title;

    function toggle(open) {
      panel.hidden = !open;
      bubble.setAttribute('aria-expanded', String(open));
      bubble.setAttribute('aria-label', open ? 'Close chat' : 'Open chat');
      if (open) input.focus();
    }
    bubble.addEventListener('click', function () { toggle(panel.hidden); });
    root.querySelector('.close').addEventListener('click', function () { toggle(false); });

    function add(role, text) {
      var item = document.createElement('li');
      item.className = role;
      item.textContent = text;
      log.appendChild(item);
      log.scrollTop = log.scrollHeight;
      return item;
    }
    function fail(item, message) {
      item.textContent = message;
      item.className = 'assistant error';
    }
    function messageId() {
      return window.crypto && crypto.randomUUID ? crypto.randomUUID() : Date.now() + '-' + Math.random().toString(36).slice(2);
    }
    function storedToken() {
      try { return localStorage.getItem(storeKey); } catch (e) { return null; }
    }
    function keepToken(token) {
      try { if (token) localStorage.setItem(storeKey, token); } catch (e) { /* private mode: one conversation per page */ }
    }

    async function send(text) {
      add('user', text);
      var item = add('assistant', '');
      item.setAttribute('aria-busy', 'true');
      var body = { channelId: channelId, content: text, clientMessageId: messageId() };
      var token = storedToken();
      if (token) body.visitorToken = token;
      var res;
      try {
        res = await fetch(endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
          body: JSON.stringify(body),
        });
      } catch (e) {
        return fail(item, 'The chat cannot be reached. Try again in a moment.');
      }
      var type = res.headers.get('content-type') || '';
      if (!res.ok || type.indexOf('text/event-stream') !== 0) {
        var message = 'Something went wrong. Try again in a moment.';
        try { message = (await res.json()).message || message; } catch (e) { /* not JSON */ }
        return fail(item, message);
      }
      var reader = res.body.getReader();
      var decoder = new TextDecoder();
      var buffer = '';
      for (;;) {
        var chunk = await reader.read();
        if (chunk.done) break;
        buffer += decoder.decode(chunk.value, { stream: true });
        var end;
        while ((end = buffer.indexOf('\\n\\n')) >= 0) {
          var raw = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          var event = 'message';
          var data = '';
          raw.split('\\n').forEach(function (line) {
            if (line.indexOf('event:') === 0) event = line.slice(6).trim();
            else if (line.indexOf('data:') === 0) data += line.slice(5).trim();
          });
          var payload = {};
          try { payload = JSON.parse(data || '{}'); } catch (e) { continue; }
          if (event === 'start') keepToken(payload.visitorToken);
          else if (event === 'delta') item.textContent += payload.content || '';
          else if (event === 'done') { item.textContent = payload.reply; keepToken(payload.visitorToken); }
          else if (event === 'error') fail(item, payload.message || 'Something went wrong.');
          log.scrollTop = log.scrollHeight;
        }
      }
      item.removeAttribute('aria-busy');
    }

    form.addEventListener('submit', async function (e) {
      e.preventDefault();
      var text = input.value.trim();
      if (!text) return;
      input.value = '';
      sendButton.disabled = true;
      try { await send(text); } finally { sendButton.disabled = false; input.focus(); }
    });
  }

  if (document.body) start();
  else document.addEventListener('DOMContentLoaded', start);
})();
`;
