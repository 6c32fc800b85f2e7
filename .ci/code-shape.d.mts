// Types of code-shape.mjs, for the test that holds the code to its limits (packages/shallot/src/code-shape.test.ts).
export declare const repoRoot: string
export declare function isTestFile(path: string): boolean
export declare function sourceFiles(root?: string): string[]
export interface LongFunction {
  readonly file: string
  readonly line: number
  readonly name: string
  readonly lines: number
}
export declare function longFunctions(maxLines?: number, root?: string): LongFunction[]
export interface LongParameterList {
  readonly file: string
  readonly line: number
  readonly name: string
  readonly params: number
}
export declare function longParameterLists(maxParams?: number, root?: string): LongParameterList[]
export declare function importGraph(root?: string): Map<string, string[]>
export declare function importCircles(root?: string): string[][]
