/** See write-atomically.js: writes `path` aside and renames it into place, so no reader sees half of it. */
export function writeAtomically(path: string, contents: string | NodeJS.ArrayBufferView): void;
