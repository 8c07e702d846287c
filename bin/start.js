#!/usr/bin/env node
// `npm start`: bundles the service (bin/bundle.js) and runs it. `NODE_OPTIONS=--enable-source-maps` maps stack
// traces to src/ (off by default: it holds every package's source map in memory).
import { pathToFileURL } from 'node:url';
import { bundle } from './bundle.js';

await import(pathToFileURL(bundle('main')).href);
