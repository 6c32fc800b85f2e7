// Bidi controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), zero-width and invisible
// operators (U+200B–U+200D, U+2060–U+2064, U+FEFF, U+180E), the soft hyphen (U+00AD), the
// deprecated format controls (U+206A–U+206F, and U+2065 between them) and the Unicode tag block
// (U+E0000–U+E007F): characters a reader never sees but a model reads, so they can carry hidden
// instructions or split a secret so no pattern sees it whole. All single-character classes: linear.
// The tag block is matched as its surrogate pairs (U+DB40 U+DC00–U+DC7F), so no `u` flag is needed: a
// non-unicode regex scans several times faster.
const INVISIBLE_SOURCE = '\\uDB40[\\uDC00-\\uDC7F]|[\\u200B-\\u200F\\u2060-\\u206F\\uFEFF\\u061C\\u202A-\\u202E\\u00AD\\u180E]'
// Runs, not single characters: 100,000 zero-width spaces in a row are one match, not 100,000.
const INVISIBLE = new RegExp(`(?:${INVISIBLE_SOURCE})+`, 'g')
const HAS_INVISIBLE = new RegExp(INVISIBLE_SOURCE)

// ANSI escape sequences and the C0 controls other than tab and newline (a lone \r included): noise
// in an error message, and a way to redraw what a terminal shows. Only error text loses these;
// successful output keeps its bytes.
// biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
const CONTROLS = /\u001b\[[0-9;?]{0,32}[ -/]{0,4}[@-~]|[\u0000-\u0008\u000B-\u001A\u001C-\u001F\u007F]+|\u001b/g
// biome-ignore lint/suspicious/noControlCharactersInRegex: detecting control characters is the point
const HAS_CONTROLS = /[\u0000-\u0008\u000B-\u001F\u007F]/

/**
 * Removes the characters a model reads but a person never sees: bidi controls, zero-width
 * characters, soft hyphens and other invisible format controls, and Unicode tag characters; the
 * same string when there are none. (A zero-width joiner inside an emoji sequence goes too: a
 * family emoji reads as its members.)
 *
 * @example
 * stripInvisible('ok\u{E0069}\u{E0067}\u200B') // 'ok'
 */
export function stripInvisible(text: string): string {
  return HAS_INVISIBLE.test(text) ? text.replace(INVISIBLE, '') : text
}

/** {@link stripInvisible}, plus ANSI escapes and C0 controls other than tab and newline. */
export function stripInvisibleAndControls(text: string): string {
  const visible = stripInvisible(text)
  return HAS_CONTROLS.test(visible) ? visible.replace(CONTROLS, '') : visible
}
