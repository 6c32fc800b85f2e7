import { mistypedPath } from './scenes/mistyped-path.js'
import { color, type Print } from './timeline.js'

const print: Print = (line) => process.stdout.write(`${line}\n`)

const scenes: Array<[string, (print: Print) => Promise<void>]> = [['The mistyped path, healed by a soft error', mistypedPath]]

for (const [index, [title, scene]] of scenes.entries()) {
  print('')
  print(color.bold(`━━ Scene ${index + 1} · ${title} ━━`))
  await scene(print)
}
