'use strict';
// The error classes: one per bitt status (bitt.h), all BittError. `code` is
// the negative status, `codeName` its stable name ('ERR_BITT_CONFLICT'),
// `message` the C core's bitt_error_last() read in the failing call.

class BittError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
    this.codeName = CODE_NAMES[code] || 'ERR_BITT';
  }

  get name() {
    return this.constructor.name;
  }
}

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
];

const CODE_NAMES = {};
const BY_CODE = {};
const classes = { BittError };
for (const [code, name, codeName] of SPECS) {
  // A named class per status, so that `instanceof` and `err.name` both work.
  const cls = { [name]: class extends BittError {} }[name];
  CODE_NAMES[code] = codeName;
  BY_CODE[code] = cls;
  classes[name] = cls;
}

/* Called by the addon to build the error it throws or rejects with. */
function makeError(code, message) {
  const Cls = BY_CODE[code] || BittError;
  return new Cls(code, message);
}

module.exports = { ...classes, makeError, CODE_NAMES };
