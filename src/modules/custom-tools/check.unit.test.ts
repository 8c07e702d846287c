import { describe, expect, it } from 'vitest';
import { argumentsProblem, parametersProblem, syntaxProblem } from './check.ts';
import { scrubSecrets } from './run.ts';

describe('tool checks', () => {
  it('accepts JSON Schemas of objects and names what is wrong with the others', () => {
    expect(parametersProblem({ type: 'object', properties: { a: { type: 'integer', minimum: 1 } } })).toBeUndefined();
    expect(parametersProblem({ type: 'object', $id: 'same', properties: {} })).toBeUndefined();
    // The same $id twice is fine (each schema is compiled on its own).
    expect(parametersProblem({ type: 'object', $id: 'same', properties: { b: { type: 'string' } } })).toBeUndefined();
    expect(parametersProblem({ type: 'array' })).toBe('parameters must be a JSON Schema with "type": "object"');
    expect(parametersProblem({ type: 'object', properties: [] })).toBe('parameters.properties must be an object');
    expect(parametersProblem({ type: 'object', properties: { a: { type: 'nope' } } })).toMatch(
      /^parameters is not a valid JSON Schema: /,
    );
    expect(parametersProblem({ type: 'object', properties: { a: { $ref: '#/definitions/none' } } })).toMatch(
      /^parameters is not a valid JSON Schema: .*can't resolve reference/,
    );
    expect(parametersProblem({ type: 'object', properties: { a: { pattern: '(' } } })).toMatch(
      /^parameters is not a valid JSON Schema/,
    );
    expect(parametersProblem({ type: 'object', description: 'x'.repeat(20_001) })).toBe(
      'parameters is larger than 20000 characters of JSON',
    );
  });

  it('checks arguments against the schema', () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    expect(argumentsProblem(schema, { city: 'Paris' })).toBeUndefined();
    expect(argumentsProblem(schema, {})).toBe("arguments must have required property 'city'");
    expect(argumentsProblem(schema, { city: 3 })).toBe('arguments/city must be string');
  });

  it('parses JavaScript and TypeScript as the body of an async function, naming the line of a fault', async () => {
    expect(await syntaxProblem('javascript', 'const r = await fetch("x");\nreturn r.status;')).toBeUndefined();
    expect(await syntaxProblem('typescript', 'const n: number = args.n;\nreturn n as number;')).toBeUndefined();
    expect(await syntaxProblem('javascript', 'const n: number = 1;')).toMatch(/^line 1:\d+: /);
    expect(await syntaxProblem('typescript', 'const a = 1;\nreturn (a +;')).toMatch(/^line 2:\d+: /);
    expect(await syntaxProblem('python', 'def (:')).toBeUndefined();
  });

  it('cuts secret values out of every part of a run', () => {
    const run = scrubSecrets(
      {
        stdout: 'key=sk-123456 ok',
        stderr: 'sk-123456',
        result: { token: 'Bearer sk-123456', list: ['sk-123456', 3], n: 1 },
        error: { name: 'Error', message: 'bad key sk-123456' },
        durationMs: 5,
        creditsCharged: 2,
      },
      ['sk-123456', 'abc'],
    );
    expect(JSON.stringify(run)).not.toContain('sk-123456');
    expect(run.stdout).toBe('key=[secret] ok');
    expect(run.result).toEqual({ token: 'Bearer [secret]', list: ['[secret]', 3], n: 1 });
    expect(run.error).toEqual({ name: 'Error', message: 'bad key [secret]' });
  });
});
