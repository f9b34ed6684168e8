'use strict';
// AbortSignal -> the core's cancel token (bitt.h "cancellation"): a call
// that may wait gets a token of its own, fired when its signal aborts (at
// once when it already has), and the core's wait then returns
// BITT_ECANCELED having leased nothing; the call rejects with the addon's
// AbortError, its cause the signal's reason. The core decides: an aborted
// signal still goes to the C call, which checks its arguments first.
const native = require('./native');
const { makeError, ECANCELED } = require('./errors');

const noop = () => {};

/* [token, release] for signal (null: no token); release() stops listening. */
function tokenFor(signal) {
  if (signal === null) return [null, noop];
  const token = native.bittw_cancel_new();
  if (signal.aborted) {
    native.bittw_cancel_fire(token);
    return [token, noop];
  }
  const fire = () => native.bittw_cancel_fire(token);
  signal.addEventListener('abort', fire, { once: true });
  return [token, () => signal.removeEventListener('abort', fire)];
}

/* The token of a synchronous call: it blocks the thread, so its signal can
 * only have aborted before it (a fired token: the core says ECANCELED). */
function syncToken(signal) {
  if (signal === null || !signal.aborted) return null;
  const token = native.bittw_cancel_new();
  native.bittw_cancel_fire(token);
  return token;
}

/* e, given the signal's reason as its cause when it is a cancellation. */
function withCause(e, signal) {
  if (e && e.status === ECANCELED && signal && e.cause === undefined) {
    Object.defineProperty(e, 'cause', { value: signal.reason, writable: true, configurable: true });
  }
  return e;
}

/* The AbortError of a call whose signal aborted after the core's call had
 * already returned (what it returned is given back by the caller). */
function aborted(what, signal) {
  return withCause(makeError(ECANCELED, `${what} was cancelled`), signal);
}

/* Runs call(token) (a Promise) under signal: settles as it does, a
 * cancellation carrying the signal's reason. */
function underSignal(signal, call) {
  if (signal === null) return call(null);
  const [token, release] = tokenFor(signal);
  let p;
  try {
    p = call(token);
  } catch (e) {
    release();
    throw e;
  }
  return p.then((r) => {
    release();
    return r;
  }, (e) => {
    release();
    throw withCause(e, signal);
  });
}

const DONE = Object.freeze({ done: true, value: undefined });

/* The end of an iteration that a signal may have ended: the AbortError it
 * left in holder._error, thrown once, else {done: true}. */
function endOf(holder) {
  const e = holder._error;
  holder._error = null;
  if (e) throw e;
  return DONE;
}

module.exports = { tokenFor, syncToken, withCause, aborted, underSignal, endOf };
