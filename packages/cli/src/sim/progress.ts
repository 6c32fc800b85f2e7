import { terminalText } from '../terminal-text.js'

/** One cell of the simulation grid (a stack at a step count), as the progress display sees it. */
export interface ProgressCell {
  label: string
  /** 1-based position of this cell in the grid. */
  cell: number
  cells: number
  runs: number
}

/** Given a cell about to run, the callback `simulate` calls after each run. */
export type Progress = (cell: ProgressCell) => (done: number, total: number) => void

/**
 * How `sim` shows progress on stderr: on a terminal one bar redrawn in place; anywhere else (a CI log, a pipe) a
 * plain line when each cell starts and at each quarter of it, so a long run is never silent and a log never fills
 * with carriage returns.
 *
 * @example
 * await runSim(flags, stacks, console.log, progressLines(console.error, process.stderr.isTTY === true))
 */
export function progressLines(err: (line: string) => void, terminal: boolean): Progress {
  if (terminal) return progressBar
  return ({ label, cell, cells, runs }) => {
    const prefix = `shallot sim: [${cell}/${cells}] ${label}`
    err(`${prefix}: ${runs} runs`)
    let quarter = 0
    return (done, total) => {
      const reached = Math.floor((done / total) * 4)
      if (reached <= quarter || done === 0) return
      quarter = reached
      err(`${prefix}: ${done}/${total} runs (${quarter * 25}%)`)
    }
  }
}

function progressBar({ label }: ProgressCell): (done: number, total: number) => void {
  let last = -1
  return (done, total) => {
    const pct = Math.floor((done / total) * 100)
    if (pct === last) return
    last = pct
    const filled = Math.round(pct / 4)
    process.stderr.write(
      `\r  ${terminalText(label).padEnd(28)} [${'#'.repeat(filled)}${'.'.repeat(25 - filled)}] ${String(pct).padStart(3)}%`,
    )
    if (done === total) process.stderr.write('\r\x1b[2K')
  }
}
