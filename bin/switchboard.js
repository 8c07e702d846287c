#!/usr/bin/env node
// The `switchboard` command: bundles the CLI (bin/bundle.js) and runs it.
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { bundle } from './bundle.js';

// A command lives a second or two: WebAssembly (the embedded database) is compiled once, quickly, and not again
// in the background for speed it would not live to use (as `npm start`'s --liftoff-only; 1.9 -> 1.3 CPU-s a
// PGlite command).
setFlagsFromString('--liftoff-only');
const { main } = await import(pathToFileURL(bundle('cli')).href);
await main(process.argv.slice(2));
