'use strict';
// The error classes of bindings/ERRORS.md: one per bitt status (bitt.h), all
// BittError. `code` is the table's string code ('ERR_BITT_CONFLICT', as
// Node's own errors and ioredis spell theirs), `status` the negative status
// number, `message` the C core's bitt_error_last() read in the failing call.
// A cancelled wait (BITT_ECANCELED) is an AbortError, as fetch and
// timers/promises reject with: code 'ABORT_ERR', cause the signal's reason.

class BittError extends Error {
  /* status: the negative bitt status; options: Error's ({cause}). */
  constructor(status, message, options) {
    super(message, options);
    this.status = status;
    this.code = CODES[status] || 'ERR_BITT';
  }

  get name() {
    return this.constructor.name;
  }
}

const ECANCELED = -16;
const SPECS = [
  [-1, 'InvalidArgument', 'ERR_BITT_INVALID'],
  [-2, 'OutOfMemory', 'ERR_BITT_NOMEM'],
  [-3, 'TooLarge', 'ERR_BITT_TOO_LARGE'],
  [-4, 'NotACounter', 'ERR_BITT_NOT_COUNTER'],
  [-5, 'Overflow', 'ERR_BITT_OVERFLOW'],
  [-6, 'ConflictError', 'ERR_BITT_CONFLICT'],
  [-7, 'BackendError', 'ERR_BITT_BACKEND'],
  [-8, 'BusyError', 'ERR_BITT_BUSY'],
  [-9, 'SchemaError', 'ERR_BITT_SCHEMA'],
  [-10, 'URLError', 'ERR_BITT_URL'],
  [-11, 'CursorError', 'ERR_BITT_CURSOR'],
  [-12, 'UsageError', 'ERR_BITT_USAGE'],
  [-13, 'Unsupported', 'ERR_BITT_UNSUPPORTED'],
  [-14, 'StaleToken', 'ERR_BITT_TOKEN'],
  [-15, 'LeaseLostError', 'ERR_BITT_LEASE_LOST'],
  [ECANCELED, 'AbortError', 'ABORT_ERR'],
];

const CODES = {};
const BY_STATUS = {};
const classes = { BittError };
for (const [status, name, code] of SPECS) {
  // A named class per status, so that `instanceof` and `err.name` both work.
  const cls = { [name]: class extends BittError {} }[name];
  CODES[status] = code;
  BY_STATUS[status] = cls;
  classes[name] = cls;
}

/* Called by the addon to build the error it throws or rejects with. */
function makeError(status, message) {
  const Cls = BY_STATUS[status] || BittError;
  return new Cls(status, message);
}

const INVALID = -1;
/* An argument refused before the core is called (ERRORS.md, second table):
 * InvalidArgument, status -1 as the core's. */
function invalid(message) {
  return makeError(INVALID, message);
}

module.exports = { ...classes, makeError, invalid, CODES, ECANCELED };
