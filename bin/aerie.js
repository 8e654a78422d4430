#!/usr/bin/env node
// Runs the TypeScript entry point through tsx, so the CLI works straight from a clone.
import { register } from 'tsx/esm/api';

register();
await import(new URL('../src/main.ts', import.meta.url).href);
