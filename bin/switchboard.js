#!/usr/bin/env node
// The `switchboard` command: runs the TypeScript CLI through tsx (a runtime dependency), no build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
