import { ToolError } from '@shallot/core'
import { z } from 'zod'

/** The one failing tool of the parity test: a repository deletion this token may not do, category `user`. */
export const deleteRepo = {
  name: 'delete_repo',
  description: 'Delete a repository by name',
  input: z.object({ repo: z.string() }),
  execute: ({ repo }: { repo: string }): string => {
    throw new ToolError('permission_denied', `the token may not delete ${repo}; an admin must approve it`, {
      category: 'user',
      hint: 'ask a person with admin rights',
    })
  },
}

/** What every host must end in for that tool: the same hard channel, with the same words. */
export const expectedChannel = {
  name: 'LoopError',
  kind: 'user_input_required',
  message: 'delete_repo needs a person: the token may not delete acme/site; an admin must approve it',
}
