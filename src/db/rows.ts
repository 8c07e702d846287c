/** The rows of a raw `execute`, which both drivers answer as `{rows}` (PGlite's and pg's results alike). */
export function rowsOf<Row = Record<string, unknown>>(result: unknown): Row[] {
  return (result as { rows: Row[] }).rows;
}
