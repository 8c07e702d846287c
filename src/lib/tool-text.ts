/** How the tool search reads a tool's and a request's text: shared by its lexical ranking and its word vectors. */

/** A text's words: lower-cased letters and digits, "e-mail" as "email". */
export const words = (s: string): string[] =>
  s
    .toLowerCase()
    .replace(/\be-mail/g, 'email')
    .match(/[a-z0-9]+/g) ?? [];

/** A tool's name without the provider prefix agent tool names start with (`github_create_issue`). */
export function ownName(t: { source: string; name: string }): string {
  const prefix = `${t.source.replace(/[^a-z0-9_]/g, '_')}_`;
  return t.name.startsWith(prefix) ? t.name.slice(prefix.length) : t.name;
}

/** A description's first sentence (up to its first `.` or `:` followed by a space), which says most. */
export function leadSentence(description: string): string {
  return description.split(/(?<=[.:])\s/)[0] ?? '';
}
