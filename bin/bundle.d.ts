/** See bundle.js: builds src/<name>.ts into dist/<name>.js unless that is up to date, and answers its path. */
export function bundle(name: string, root?: string): string;
