#!/usr/bin/env node
// `npm start`: bundles the service (bin/bundle.js) and runs it; stack traces point into src/ through the map.
import { pathToFileURL } from 'node:url';
import { bundle } from './bundle.js';

process.setSourceMapsEnabled(true);
await import(pathToFileURL(bundle('main')).href);
