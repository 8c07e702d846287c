// Compilation progress on the knowledge page: while a source is pending or processing (`#busy` is shown), asks
// the page's status route every 2 s and puts each source's status and error in its row; once none is left it
// says how many pages the base has, with a link to reload. Without JavaScript the page says to reload by hand.
const table = document.querySelector('table[data-status-url]');
const busy = document.getElementById('busy');
const BADGE = { compiled: 'badge-active', failed: 'badge-error' };

async function tick() {
  let body;
  try {
    const res = await fetch(table.dataset.statusUrl, { headers: { accept: 'application/json' } });
    if (!res.ok) return;
    body = await res.json();
  } catch {
    return;
  }
  let working = false;
  for (const source of body.sources) {
    const row = table.querySelector(`tr[data-source="${CSS.escape(source.id)}"]`);
    if (source.status === 'pending' || source.status === 'processing') working = true;
    if (!row) continue;
    const badge = row.querySelector('.badge');
    if (badge) {
      badge.textContent = source.status;
      badge.className = `badge ${BADGE[source.status] ?? 'badge-expired'}`;
    }
    const error = row.querySelector('.source-error');
    if (error) error.textContent = source.error ?? '';
  }
  if (working) {
    setTimeout(tick, 2000);
    return;
  }
  const reload = document.createElement('a');
  reload.href = window.location.pathname;
  reload.textContent = 'Reload';
  busy.textContent = `Compiled: ${body.pageTotal} page${body.pageTotal === 1 ? '' : 's'} in this base. `;
  busy.append(reload, ' to see them.');
}

if (table && busy) setTimeout(tick, 2000);
