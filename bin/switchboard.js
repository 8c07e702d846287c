#!/usr/bin/env node
// The `switchboard` command: bundles the CLI (bin/bundle.js) and runs it.
import { pathToFileURL } from 'node:url';
import { bundle } from './bundle.js';

const { main } = await import(pathToFileURL(bundle('cli')).href);
await main(process.argv.slice(2));
