import { Ajv, type ValidateFunction } from 'ajv';
import { transform } from 'esbuild';
import type { ToolLanguage } from './schema.ts';

/**
 * The checks a tool passes before it is stored or returned: its `parameters` are a JSON Schema of an object
 * (compiled by ajv), and its JavaScript or TypeScript code parses as the body of an async function (esbuild).
 * Arguments a model sends are validated against the schema before the code runs.
 */

/** The largest `parameters` schema, as JSON (characters). */
export const PARAMETERS_MAX_CHARS = 20_000;

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
/** Compiled validators by schema text; ajv's own cache holds schema objects, which a database read renews. */
const compiled = new Map<string, ValidateFunction>();
const COMPILED_MAX = 500;

function validatorFor(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  const hit = compiled.get(key);
  if (hit) return hit;
  // A copy without `$id`: two tools may well give the same id, which ajv would refuse to register twice.
  const { $id: _ignored, ...body } = schema;
  const fn = ajv.compile(body);
  ajv.removeSchema(body);
  if (compiled.size >= COMPILED_MAX) {
    const oldest = compiled.keys().next().value;
    if (oldest !== undefined) compiled.delete(oldest);
  }
  compiled.set(key, fn);
  return fn;
}

/** Why `parameters` is not a usable JSON Schema of an object, or undefined when it is. */
export function parametersProblem(parameters: Record<string, unknown>): string | undefined {
  if (JSON.stringify(parameters).length > PARAMETERS_MAX_CHARS) {
    return `parameters is larger than ${PARAMETERS_MAX_CHARS} characters of JSON`;
  }
  if (parameters.type !== 'object') return 'parameters must be a JSON Schema with "type": "object"';
  if (
    parameters.properties !== undefined &&
    (typeof parameters.properties !== 'object' ||
      parameters.properties === null ||
      Array.isArray(parameters.properties))
  ) {
    return 'parameters.properties must be an object';
  }
  const { $id: _ignored, ...body } = parameters;
  if (!ajv.validateSchema(body)) {
    return `parameters is not a valid JSON Schema: ${ajv.errorsText(ajv.errors, { dataVar: 'parameters' })}`;
  }
  try {
    validatorFor(parameters);
  } catch (err) {
    return `parameters is not a valid JSON Schema: ${(err as Error).message}`;
  }
  return undefined;
}

/** Why `args` do not fit the tool's schema (every fault, one line), or undefined when they do. */
export function argumentsProblem(parameters: Record<string, unknown>, args: unknown): string | undefined {
  const validate = validatorFor(parameters);
  if (validate(args)) return undefined;
  return ajv.errorsText(validate.errors, { dataVar: 'arguments' });
}

/**
 * Why the code does not parse, or undefined when it does. JavaScript and TypeScript are parsed by esbuild as
 * the body of an async function (so top-level `return` and `await` are fine). Python is not checked here.
 */
export async function syntaxProblem(language: ToolLanguage, code: string): Promise<string | undefined> {
  if (language === 'python') return undefined;
  try {
    await transform(`(async function (args, secrets) {\n${code}\n})`, {
      loader: language === 'typescript' ? 'ts' : 'js',
      logLevel: 'silent',
    });
    return undefined;
  } catch (err) {
    const errors = (err as { errors?: { text: string; location?: { line: number; column: number } | null }[] }).errors;
    const first = errors?.[0];
    if (!first) return (err as Error).message;
    // Line numbers of the code as written: the wrapper adds one line before it.
    return first.location ? `line ${first.location.line - 1}:${first.location.column + 1}: ${first.text}` : first.text;
  }
}
