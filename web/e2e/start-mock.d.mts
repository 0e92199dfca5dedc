// Types of start-mock.mjs, for test/mock-schema.test.ts.

export declare function startMock(options?: { args?: string[]; onStderr?: (chunk: string) => void }): Promise<{ url: string; stop: () => void }>;
