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
const HAS_CONFUSABLE = new RegExp(`[${Object.keys(CONFUSABLES).join('')}]`);

const LEET: Record<string, string> = { '0': 'o', '1': 'i', '3': 'e', '4': 'a', '5': 's', '7': 't', '@': 'a', $: 's' };
const LEET_L: Record<string, string> = { ...LEET, '1': 'l' };

// Arabic: tatweel (a stretching stroke, invisible in meaning) out; hamza-carrying alefs, alef maqsura and
// ta marbuta to their plain letters, as Arabic search engines fold them, so one spelling of a rule fits all.
const ARABIC_FOLD: Record<string, string> = { أ: 'ا', إ: 'ا', آ: 'ا', ٱ: 'ا', ى: 'ي', ة: 'ه' };
const ARABIC_FOLD_RE = /[أإآٱىة\u0640]/g;

/**
 * Accents off (Latin, Greek, Cyrillic: "é" to "e", "й" to "и", "ё" to "е"; Arabic vowel marks), then the Arabic
 * letter folds. Japanese and other scripts keep their marks: a dakuten changes the word. The rules' own
 * sources go through this too (see injection-rules.ts), so a rule is written in ordinary spelling.
 */
export function foldMarks(text: string): string {
  return text
    .normalize('NFD')
    .replace(/([\p{Script=Latin}\p{Script=Greek}\p{Script=Cyrillic}\p{Script=Arabic}])\p{M}+/gu, '$1')
    .normalize('NFC')
    .replace(ARABIC_FOLD_RE, (c) => ARABIC_FOLD[c] ?? '');
}

/** Latin letters outnumber Cyrillic and Greek ones (addresses and links not counted). */
function latinDominant(t: string): boolean {
  const prose = t.length > 4096 ? t : t.replace(/\S+@\S+|https?:\/\/\S+/g, ' ');
  let latin = 0;
  let other = 0;
  for (let i = 0; i < prose.length; i++) {
    const c = prose.charCodeAt(i);
    if (c >= 97 && c <= 122) latin++;
    else if (c >= 0x370 && c <= 0x52f) other++;
  }
  return latin >= other;
}

const LATIN_LETTER = /[a-z]/;
const ALL_CONFUSABLE = new RegExp(`^[${Object.keys(CONFUSABLES).join('')}]+$`);

/**
 * NFKC, invisibles out, look-alikes to Latin, lower case, accents off, `_` as a space, s p a c e d letters joined.
 * Look-alikes are folded inside words that also hold a Latin letter ("іgnоrе"), and in a mostly Latin text
 * also in words made of look-alikes only ("сору"); a Russian word ("отправь", or "все" in Russian prose) stays.
 */
export function fold(text: string): string {
  let t = text.normalize('NFKC').replace(INVISIBLE, '').toLowerCase();
  if (HAS_CONFUSABLE.test(t)) {
    const latin = latinDominant(t);
    t = t.replace(/[\p{L}\p{M}]+/gu, (w) =>
      LATIN_LETTER.test(w) || (latin && ALL_CONFUSABLE.test(w))
        ? w.replace(CONFUSABLE_RE, (c) => CONFUSABLES[c] ?? c)
        : w,
    );
  }
  t = foldMarks(t);
  t = t.replace(/_/g, ' ');
  // "i g n o r e" / "i.g.n.o.r.e" / "i-g-n-o-r-e": three or more single letters with one separator each.
  // The separator must stay the same along a run, so "p.r.e.v.i.o.u.s i.n.s" keeps its word break.
  t = t.replace(/(?<![\p{L}\p{N}])\p{L}([ .\-*])(?:\p{L}\1){1,}\p{L}(?![\p{L}\p{N}])/gu, (run) =>
    run.replace(/[ .\-*]/g, ''),
  );
  return t.replace(/[ \t]{2,}/g, ' ');
}

/**
 * Digits and symbols read as letters inside words ("1gn0r3"); only for texts that mix them. `1` stands for
 * `i` or `l` ("ru135"), so `l` gives a second view when the text has a `1`.
 */
export function unleet(folded: string, one: 'i' | 'l' = 'i'): string | null {
  if (!/[a-z][0-9@$]|[0-9@$][a-z]/.test(folded)) return null;
  const map = one === 'i' ? LEET : LEET_L;
  // Words only: a run longer than a word (base64, a hash) is no l33t spelling.
  return folded.replace(/[a-z0-9@$]{2,24}/g, (w) =>
    /[a-z]/.test(w) ? w.replace(/(?<=[a-z0-9@$])[0134573@$]|[0134573@$](?=[a-z])/g, (c) => map[c] ?? c) : w,
  );
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

/** Past this length the leet and rot13 views keep only the sentences where they can matter (see views). */
const WHOLE_VIEW_LIMIT = 4096;
// Stems an instruction hidden by l33t or rot13 would almost always spell out (English and the other Latin-script
// languages of the rules); on a long text, a decoded sentence with none of them is not kept.
const KEY_STEMS =
  /ignor|instruc|prompt|system|passw|token|secret|reveal|rule|forget|disregard|admin|credential|forward|delete|export|key|regl|consign|anweis|regel|istruz|regol|senha|contrase|oubli|vergiss|olvid|esquec|dimentic/;
/**
 * The sentences (up to `.`, `!`, `?` or a line break) of `view` for which `keep(sentence, index)` holds,
 * one a line. `view` is a same-length rewrite of `folded` (l33t and rot13 replace letter for letter).
 */
function sentences(view: string, keep: (sentence: string, start: number) => boolean): string {
  const out: string[] = [];
  for (const m of view.matchAll(/[^.\n!?]+[.\n!?]?/g)) {
    if (keep(m[0], m.index)) out.push(m[0]);
  }
  return out.join('\n');
}

/**
 * Every view of a text the rules look at, folded. The l33t and rot13 views cost a full pass of every rule
 * each; on a long text (a tool output) they keep only the sentences they change that spell a key word
 * (KEY_STEMS), so a 50 KB output costs about one full view plus its decoded runs (bench/injection.ts).
 */
export function views(text: string): string[] {
  const folded = fold(text);
  const out = [folded];
  const long = folded.length > WHOLE_VIEW_LIMIT;
  const changed = (view: string) =>
    long ? sentences(view, (s, start) => KEY_STEMS.test(s) && s !== folded.slice(start, start + s.length)) : view;
  const leet = unleet(folded);
  if (leet) {
    out.push(changed(leet));
    if (/[a-z]1|1[a-z]/.test(folded)) out.push(changed(unleet(folded, 'l') ?? leet));
  }
  // rot13 only when the text has long runs of Latin letters that could be hiding words.
  if (/[a-z]{4,}/.test(folded)) {
    const r = rot13(folded);
    out.push(long ? sentences(r, (s) => KEY_STEMS.test(s)) : r);
  }
  for (const run of decodedRuns(text)) out.push(fold(run));
  return out;
}
