/** The rows of a raw `execute`, which both drivers answer as `{rows}`. */
export function rowsOf(result: unknown): Record<string, unknown>[] {
  return (result as { rows: Record<string, unknown>[] }).rows;
}
