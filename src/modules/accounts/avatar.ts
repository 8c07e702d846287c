import { createHash } from 'node:crypto';

/** Serves an account's avatar: the uploaded image, or an SVG of its initials on a colour from its id. */

export interface AvatarImage {
  contentType: string;
  body: Buffer | string;
}

export function decodeDataUri(uri: string): AvatarImage | undefined {
  const m = /^data:(image\/(?:png|jpeg|gif|webp));base64,(.+)$/.exec(uri);
  if (!m?.[1] || !m[2]) return undefined;
  return { contentType: m[1], body: Buffer.from(m[2], 'base64') };
}

function initialsOf(name: string): string {
  const words = name.trim().split(/\s+/).filter(Boolean);
  const letters = words.length > 1 ? [words[0], words[words.length - 1]] : [words[0]];
  return letters
    .map((w) => (w ? [...w][0] : ''))
    .join('')
    .toUpperCase()
    .slice(0, 2);
}

const escapeXml = (s: string) =>
  s.replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c] ?? c);

export function initialsSvg(id: string, name: string): AvatarImage {
  const hue = createHash('sha256').update(id).digest()[0] ?? 0;
  const text = escapeXml(initialsOf(name) || '?');
  const body =
    `<svg xmlns="http://www.w3.org/2000/svg" width="128" height="128" viewBox="0 0 128 128" role="img" aria-label="${text}">` +
    `<rect width="128" height="128" rx="64" fill="hsl(${Math.round((hue / 255) * 360)},55%,45%)"/>` +
    `<text x="64" y="64" dy=".35em" text-anchor="middle" font-family="system-ui,sans-serif" font-size="52" fill="#fff">${text}</text></svg>`;
  return { contentType: 'image/svg+xml', body };
}
