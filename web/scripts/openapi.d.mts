// Types of openapi.mjs, for the tests that import it.

export declare const SPEC_PATH: string;

/** The schema as a plain object; `problems` gets one line per key given twice. */
export declare function loadSpec(options?: { path?: string; problems?: string[] }): Record<string, any>;

export interface CheckedResponse {
  method: string;
  /** Without the query. */
  path: string;
  status: number;
  contentType: string | null | undefined;
  /** The body as sent ('' for none). */
  body: string;
}

export interface ResponseValidator {
  operation(
    method: string,
    path: string,
  ): { template: string; operationId: string | null; methods: string[]; op: Record<string, any> | null } | null;
  operations(): { template: string; method: string; operationId: string }[];
  /** What is wrong with `value` as an instance of `#/components/schemas/<name>`; empty when nothing. */
  checkSchema(name: string, value: unknown): string[];
  /** What is wrong with the response; empty when it matches the schema. */
  check(response: CheckedResponse): string[];
}

export declare function responseValidator(spec?: Record<string, any>): ResponseValidator;
