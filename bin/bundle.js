// Builds one entry point of src/ into a single ES module under dist/ with esbuild (a dependency of tsx, so
// always installed), and answers its path. Packages stay external, imported from node_modules as usual.
// Running the bundle instead of TypeScript through tsx's loader halves start-up and saves about 80 MB of
// resident memory. A bundle is built again only when a file it was built from (esbuild's own list of them),
// tsconfig.json or this script is not exactly as it was then, by modification time: building took 50 ms on a
// fast machine and 270 to 400 ms on a slow one, at every start of the server and of each CLI command. Equal
// times, not "older than the bundle": a source put back with an older time (a copy that keeps times, another
// checkout) is a change too, and a clock set back cannot hide one.
import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync, stop } from 'esbuild';
import { writeAtomically } from '../src/lib/write-atomically.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SCRIPT = fileURLToPath(import.meta.url);

/**
 * `bundle('main')` builds src/main.ts into dist/main.js (and its source map) unless that is up to date, and
 * answers its path. `root` is the project's folder (another one in tests).
 */
export function bundle(name, root = ROOT) {
  const outfile = join(root, 'dist', `${name}.js`);
  const stampsFile = join(root, 'dist', `${name}.inputs.json`);
  if (upToDate(outfile, stampsFile, root)) return outfile;
  const started = Date.now();
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
  // Written aside and renamed: several processes starting at once never read a half-written file. The bundle goes
  // first, its stamps last: a bundle is only ever trusted with the stamps of its own build.
  for (const file of result.outputFiles) writeAtomically(file.path, file.contents);
  writeAtomically(stampsFile, JSON.stringify(stampsOf(Object.keys(result.metafile.inputs), root, started)));
  return outfile;
}

/**
 * The modification time of each input (relative to `root`), tsconfig.json and this script. A file saved since
 * the build started may not be what esbuild read: its stamp is left empty, so the next start builds again.
 */
function stampsOf(inputs, root, started) {
  const stamp = (path) => {
    const mtime = statSync(path).mtimeMs;
    return mtime < started ? mtime : null;
  };
  const files = {};
  for (const file of [...inputs, 'tsconfig.json']) {
    try {
      files[file] = stamp(join(root, file));
    } catch {
      // no tsconfig.json: nothing to compare
    }
  }
  return { bundler: stamp(SCRIPT), files };
}

/** The bundle exists and every file it was built from has the time it had then. */
function upToDate(outfile, stampsFile, root) {
  try {
    statSync(outfile);
    const { bundler, files } = JSON.parse(readFileSync(stampsFile, 'utf8'));
    if (bundler !== statSync(SCRIPT).mtimeMs) return false;
    return Object.entries(files).every(([file, mtime]) => statSync(join(root, file)).mtimeMs === mtime);
  } catch {
    return false; // no bundle or stamps yet, or an input is gone: build
  }
}
