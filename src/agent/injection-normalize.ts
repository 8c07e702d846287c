/**
 * Text views the injection rules run on. Attackers hide instructions behind look-alike letters, invisible
 * characters, s p a c e d letters, l33t digits and encodings (base64, hex, %XX, \uXXXX, rot13); each view
 * undoes one family of tricks. Work is bounded: at most MAX_DECODED runs are decoded, each at most
 * MAX_RUN characters, so a 50 KB tool output costs a few linear passes (see bench/injection.ts).
 */

const MAX_DECODED = 24;
const MAX_RUN = 4096;

// Zero-width, bidi controls, soft hyphen, word joiners, BOM, Mongolian vowel separator, tag characters.
const INVISIBLE = /[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u206a-\u206f\ufeff]|[\u{e0000}-\u{e007f}]/gu;

// Cyrillic and Greek letters that look like Latin ones (NFKC already folds full-width forms).
const CONFUSABLES: Record<string, string> = {
  а: 'a',
  в: 'b',
  е: 'e',
  ё: 'e',
  к: 'k',
  м: 'm',
  н: 'h',
  о: 'o',
  р: 'p',
  с: 'c',
  т: 't',
  у: 'y',
  х: 'x',
  і: 'i',
  ї: 'i',
  ј: 'j',
  ѕ: 's',
  ԁ: 'd',
  һ: 'h',
  ԛ: 'q',
  ԝ: 'w',
  ӏ: 'l',
  α: 'a',
  β: 'b',
  ε: 'e',
  η: 'n',
  ι: 'i',
  κ: 'k',
  ν: 'v',
  ο: 'o',
  ρ: 'p',
  τ: 't',
  υ: 'u',
  χ: 'x',
  ϲ: 'c',
};
const CONFUSABLE_RE = new RegExp(`[${Object.keys(CONFUSABLES).join('')}]`, 'g');

const LEET: Record<string, string> = { '0': 'o', '1': 'i', '3': 'e', '4': 'a', '5': 's', '7': 't', '@': 'a', $: 's' };

/** NFKC, invisibles out, look-alikes to Latin, lower case, accents off, `_` as a space, s p a c e d letters joined. */
export function fold(text: string): string {
  let t = text.normalize('NFKC').replace(INVISIBLE, '').toLowerCase();
  t = t.replace(CONFUSABLE_RE, (c) => CONFUSABLES[c] ?? c);
  t = t.normalize('NFD').replace(/\p{M}/gu, '');
  t = t.replace(/_/g, ' ');
  // "i g n o r e" / "i.g.n.o.r.e" / "i-g-n-o-r-e": three or more single letters with one separator each.
  // The separator must stay the same along a run, so "p.r.e.v.i.o.u.s i.n.s" keeps its word break.
  t = t.replace(/(?<![\p{L}\p{N}])\p{L}([ .\-*])(?:\p{L}\1){1,}\p{L}(?![\p{L}\p{N}])/gu, (run) =>
    run.replace(/[ .\-*]/g, ''),
  );
  return t.replace(/[ \t]{2,}/g, ' ');
}

/** Digits and symbols read as letters inside words ("1gn0r3"); only for texts that mix them. */
export function unleet(folded: string): string | null {
  if (!/[a-z][0-9@$]|[0-9@$][a-z]/.test(folded)) return null;
  return folded.replace(/(?<=[a-z0-9@$])[0134573@$]|[0134573@$](?=[a-z])/g, (c) => LEET[c] ?? c);
}

export function rot13(text: string): string {
  return text.replace(/[a-z]/g, (c) => String.fromCharCode(((c.charCodeAt(0) - 97 + 13) % 26) + 97));
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A decoded run is kept only when it reads as text: valid UTF-8, mostly letters and spaces, with a space or CJK. */
function asText(bytes: Uint8Array): string | null {
  let s: string;
  try {
    s = utf8.decode(bytes);
  } catch {
    return null;
  }
  if (s.length < 8) return null;
  const letters = s.match(/[\p{L}\s.,:;!?'"()-]/gu)?.length ?? 0;
  if (letters / s.length < 0.85) return null;
  return /\s|\p{Script=Han}/u.test(s) ? s : null;
}

/** Texts hidden in base64, hex, percent-encoding and \u escapes, each run bounded. */
export function decodedRuns(text: string): string[] {
  const out: string[] = [];
  const push = (s: string | null) => {
    if (s && out.length < MAX_DECODED) out.push(s);
  };
  for (const m of text.matchAll(/[A-Za-z0-9+/]{16,}={0,2}|[A-Za-z0-9_-]{16,}={0,2}/g)) {
    if (out.length >= MAX_DECODED) break;
    const run = m[0].slice(0, MAX_RUN);
    if (/^[0-9a-f]+$/i.test(run)) continue; // hex is handled below
    push(asText(Buffer.from(run.replace(/-/g, '+').replace(/_/g, '/'), 'base64')));
  }
  for (const m of text.matchAll(/(?:[0-9a-fA-F]{2}[\s:]?){8,}/g)) {
    if (out.length >= MAX_DECODED) break;
    push(asText(Buffer.from(m[0].replace(/[\s:]/g, '').slice(0, MAX_RUN), 'hex')));
  }
  for (const m of text.matchAll(/(?:%[0-9a-fA-F]{2}[^\s%]{0,12}){3,}/g)) {
    if (out.length >= MAX_DECODED) break;
    try {
      push(decodeURIComponent(m[0].slice(0, MAX_RUN)));
    } catch {
      // a stray % is not an encoding
    }
  }
  for (const m of text.matchAll(/(?:\\u[0-9a-fA-F]{4}){4,}/g)) {
    if (out.length >= MAX_DECODED) break;
    push(
      m[0]
        .slice(0, MAX_RUN)
        .replace(/\\u([0-9a-fA-F]{4})/g, (_, h: string) => String.fromCharCode(Number.parseInt(h, 16))),
    );
  }
  return out;
}

/** Every view of a text the rules look at, folded. */
export function views(text: string): string[] {
  const folded = fold(text);
  const out = [folded];
  const leet = unleet(folded);
  if (leet) out.push(leet);
  // rot13 only when the text has long runs of Latin letters that could be hiding words.
  if (/[a-z]{4,}/.test(folded)) out.push(rot13(folded));
  for (const run of decodedRuns(text)) out.push(fold(run));
  return out;
}
