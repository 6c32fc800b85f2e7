export { builtinDefinitions, builtins, DEFAULT_STACK, type DefaultBuiltin } from './builtins.js'
