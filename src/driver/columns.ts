// The typed form of a submission (UMDARG_SUBMITCOLUMNSTOHWQUEUE), checked once for every user-mode half
// of this folder: CommandCount must count entries every column has.

import { WddmError } from '../base/errors.js';
import type { UMDARG_SUBMITCOLUMNSTOHWQUEUE } from '../ddi/ddi.js';

/** The submission's CommandCount, or a WddmError (nothing written) when it is not a count of the columns' entries. */
export function columnsCommandCount(args: UMDARG_SUBMITCOLUMNSTOHWQUEUE): number {
  const total = args.CommandCount;
  if (!Number.isInteger(total) || total < 0 || total > args.Ops.length || total > args.GpuVas.length || total > args.Values.length || total > args.Handles.length) {
    throw new WddmError('INVALID_PARAMETER', `submitColumnsToHwQueue: CommandCount ${total} is not a count of the columns' entries`,
      { parameter: 'CommandCount', value: total, expected: 'an integer from 0 to the columns\' length' });
  }
  return total;
}
