#!/usr/bin/env node
// The `switchboard` command: runs the TypeScript CLI through tsx (a runtime dependency), no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli.ts');
await main(process.argv.slice(2));
