// Builds one entry point of src/ into a single ES module under dist/ with esbuild (a dependency of tsx, so
// always installed), and answers its path. Packages stay external, imported from node_modules as usual.
// Running the bundle instead of TypeScript through tsx's loader halves start-up and saves about 80 MB of
// resident memory. A bundle is built again only when one of the files it was built from (esbuild's own list of
// them, kept beside it), this script or tsconfig.json changed since that build started: building took 50 ms on a
// fast machine and 270 to 400 ms on a slow one, every start of the server and of each CLI command.
import { mkdirSync, readFileSync, renameSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync, stop } from 'esbuild';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SCRIPT = fileURLToPath(import.meta.url);

/**
 * `bundle('main')` builds src/main.ts into dist/main.js (and its source map) unless that is up to date, and
 * answers its path. `root` is the project's folder (another one in tests).
 */
export function bundle(name, root = ROOT) {
  const outfile = join(root, 'dist', `${name}.js`);
  const inputsFile = join(root, 'dist', `${name}.inputs.json`);
  if (upToDate(outfile, inputsFile, root)) return outfile;
  const started = new Date();
  const result = buildSync({
    entryPoints: [join(root, 'src', `${name}.ts`)],
    outfile,
    absWorkingDir: root,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    sourcemap: 'linked',
    metafile: true,
    write: false,
    logLevel: 'warning',
  });
  // buildSync runs esbuild's service (a child process, behind a worker thread) and keeps it for later calls:
  // stopped here, it does not live on beside the server for the life of the process.
  void stop();
  mkdirSync(dirname(outfile), { recursive: true });
  // Written aside and renamed: several processes starting at once never read a half-written file. The list of
  // inputs goes first, so a bundle is never newer than the list it is checked against.
  const inputs = Object.keys(result.metafile.inputs);
  const files = [{ path: inputsFile, contents: JSON.stringify(inputs) }, ...result.outputFiles];
  for (const file of files) {
    const tmp = `${file.path}.${process.pid}.tmp`;
    writeFileSync(tmp, file.contents);
    // Dated from the start of the build: a source saved while it ran makes the next start build again.
    utimesSync(tmp, started, started);
    renameSync(tmp, file.path);
  }
  return outfile;
}

/** The bundle exists and none of its inputs (nor this script, nor tsconfig.json) changed since it was built. */
function upToDate(outfile, inputsFile, root) {
  try {
    const built = statSync(outfile).mtimeMs;
    const inputs = JSON.parse(readFileSync(inputsFile, 'utf8'));
    const sources = [...inputs.map((file) => join(root, file)), SCRIPT, join(root, 'tsconfig.json')];
    return sources.every((file) => statSync(file).mtimeMs < built);
  } catch {
    return false; // no bundle yet, no list, or an input is gone: build
  }
}
