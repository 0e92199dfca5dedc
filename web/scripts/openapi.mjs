// The REST API's schema, ../openapi.yaml (the repository's root), for the dashboard's tooling:
// `loadSpec` reads it for the type generator (gen-types.mjs); `responseValidator` checks a response
// (method, path, status, content type, body) against it, for the mock server's schema test
// (test/mock-schema.test.ts) and `e2e/mock-server.mjs --check-schema`.
//
// YAML forbids a key twice in one mapping, and openapi-typescript's parser (js-yaml) refuses such
// a file outright. Here a repeated key is collected in `problems` with its line (gen:types prints
// it as a warning) and the last value wins (what most YAML readers do when told to be lenient), so
// one slip in the schema's prose does not stop the dashboard's build; `npm run gen:types --
// --strict` fails on it instead.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parseDocument } from 'yaml';

export const SPEC_PATH = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'openapi.yaml');

/** The schema as a plain object; `problems` gets one line per repeated key. */
export function loadSpec({ path = SPEC_PATH, problems = [] } = {}) {
  const text = readFileSync(path, 'utf8');
  const strict = parseDocument(text, { prettyErrors: true });
  const fatal = strict.errors.filter((e) => e.code !== 'DUPLICATE_KEY');
  if (fatal.length) throw new Error(`${path}: ${fatal.map((e) => e.message).join('\n')}`);
  for (const e of strict.errors) {
    const at = e.linePos?.[0];
    problems.push(`${path}:${at ? `${at.line}:${at.col}` : '?'}: a key given twice in one mapping (YAML forbids it)`);
  }
  const doc = strict.errors.length ? parseDocument(text, { uniqueKeys: false }) : strict;
  if (doc.errors.length) throw new Error(`${path}: ${doc.errors.map((e) => e.message).join('\n')}`);
  return doc.toJS({ maxAliasCount: -1 });
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** An Ajv error's parameters, short. */
const paramsText = (params) => {
  if (!params || !Object.keys(params).length) return '';
  const text = JSON.stringify(params);
  return ` ${text.length > 160 ? `${text.slice(0, 157)}...` : text}`;
};

/** "~" and "/" escaped for a JSON pointer. */
const pointer = (...parts) => parts.map((p) => `/${String(p).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');

/**
 * Checks responses against the schema. OpenAPI 3.1's schemas are JSON Schema 2020-12 (nullable
 * is `type: [x, 'null']`, no `nullable`), so Ajv's 2020 dialect validates them as they are,
 * `$ref`s included; ajv-formats checks `date-time` and `uri`, and OpenAPI's `int32` and `int64`
 * are added here. A path is matched against the schema's path templates (`{param}` = one
 * segment); a response `$ref` (`#/components/responses/...`) is followed.
 */
export function responseValidator(spec = loadSpec()) {
  if (!/^3\.1\./.test(String(spec.openapi))) throw new Error(`expected OpenAPI 3.1.x, got ${spec.openapi}`);
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  addFormats(ajv);
  ajv.addFormat('int32', { type: 'number', validate: (n) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 });
  // JSON numbers past 2^53 lose precision in any JavaScript reader; an integer is all one can check.
  ajv.addFormat('int64', { type: 'number', validate: (n) => Number.isInteger(n) });
  // The schema's `paths` and `components` hold the schemas `$ref`s point into; Ajv compiles the
  // document they sit in too, where these two are the only members (no-op keywords).
  ajv.addVocabulary(['paths', 'components']);
  const ID = 'urn:kfaild:openapi';
  ajv.addSchema({ $id: ID, paths: spec.paths, components: spec.components }, undefined, undefined, false);
  const compiled = new Map();
  const compile = (ptr) => {
    let v = compiled.get(ptr);
    if (!v) compiled.set(ptr, (v = ajv.compile({ $ref: `${ID}#${ptr}` })));
    return v;
  };
  const templates = Object.keys(spec.paths).map((t) => ({
    template: t,
    re: new RegExp(`^${t.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}/]+\}/g, '[^/]+')}$`),
  }));
  const resolveResponse = (ptr, response) => {
    for (let i = 0; response && typeof response.$ref === 'string'; i++) {
      if (i > 10 || !response.$ref.startsWith('#/')) throw new Error(`cannot follow ${response.$ref}`);
      ptr = response.$ref.slice(1);
      response = ptr.split('/').slice(1).reduce((o, k) => o?.[k.replaceAll('~1', '/').replaceAll('~0', '~')], spec);
    }
    return { ptr, response };
  };

  return {
    /** The schema's path template and operation for a concrete method and path (no query), if any. */
    operation(method, path) {
      // A literal template (/drills/last) wins over one with a parameter in its place.
      const hits = templates.filter((t) => t.re.test(path)).sort((a, b) => a.template.split('{').length - b.template.split('{').length);
      if (!hits.length) return null;
      const m = method.toLowerCase() === 'head' ? 'get' : method.toLowerCase();
      const item = spec.paths[hits[0].template];
      return { template: hits[0].template, operationId: item[m]?.operationId ?? null, methods: METHODS.filter((x) => item[x]), op: item[m] ?? null };
    },

    /** Every operation of the schema, as {template, method, operationId}. */
    operations() {
      return Object.entries(spec.paths).flatMap(([template, item]) =>
        METHODS.filter((m) => item[m]).map((m) => ({ template, method: m.toUpperCase(), operationId: item[m].operationId })),
      );
    },

    /** What is wrong with `value` as an instance of `#/components/schemas/<name>`; empty when nothing. */
    checkSchema(name, value) {
      if (!spec.components?.schemas?.[name]) return [`no schema named ${name}`];
      const validate = compile(pointer('components', 'schemas', name));
      return validate(value) ? [] : validate.errors.map((e) => `${name}: ${e.instancePath || '(value)'} ${e.message}${paramsText(e.params)}`);
    },

    /**
     * What is wrong with a response, as messages (empty when it matches the schema). `body` is the
     * raw text. Conventions the schema states in prose rather than per operation: an unknown
     * path is a 404 and a known path's unknown method a 405, both problem documents.
     */
    check({ method, path, status, contentType, body }) {
      const where = `${method} ${path} → ${status}`;
      const found = this.operation(method, path);
      if (!found || !found.op) {
        const expected = found ? 405 : 404;
        if (status !== expected) return [`${where}: ${found ? `${found.template} has no ${method}` : 'no such path in the schema'}, expected ${expected}`];
        const problem = { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } };
        return checkBody(where, problem, () => pointer('components', 'schemas', 'Problem'), contentType, body);
      }
      const responses = found.op.responses ?? {};
      const key = [String(status), `${String(status)[0]}XX`, 'default'].find((k) => k in responses);
      if (key === undefined) return [`${where}: status ${status} is not a documented response of ${method} ${found.template} (${Object.keys(responses).join(', ')})`];
      const { ptr, response } = resolveResponse(pointer('paths', found.template, method.toLowerCase(), 'responses', key), responses[key]);
      return checkBody(where, response.content ?? {}, (type) => `${ptr}${pointer('content', type, 'schema')}`, contentType, body);
    },
  };

  function checkBody(where, content, schemaPointer, contentType, body) {
    const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
    if (!Object.keys(content).length) return body ? [`${where}: the schema gives no body, the response has ${body.length} bytes`] : [];
    if (!(type in content)) return [`${where}: content type "${contentType ?? ''}" is not one of ${Object.keys(content).join(', ')}`];
    if (!content[type].schema || !/[/+]json$/.test(type)) return [];
    let value;
    try {
      value = JSON.parse(body);
    } catch (e) {
      return [`${where}: the body is not JSON (${e.message})`];
    }
    const validate = compile(schemaPointer(type));
    if (validate(value)) return [];
    return validate.errors.map((e) => `${where}: ${e.instancePath || '(body)'} ${e.message}${paramsText(e.params)}`);
  }
}
