// ESM entry: the CommonJS module's exports, named.
import bitt from './index.js';

export default bitt;
export const {
  open, openAsync, attach, attachAsync, Store, AsyncStore, Atomic, AsyncAtomic, Subscription, AsyncSubscription, Message, Schedule,
  Lease, Entry, Consumer, Worker, Snooze,
  BittError, InvalidArgument, OutOfMemory, TooLarge, NotACounter, Overflow, ConflictError, BackendError,
  BusyError, SchemaError, URLError, CursorError, UsageError, Unsupported, StaleToken, LeaseLostError, AbortError,
  encodeKey, decodeTuple, encodeValue, decodeValue, KIND_BYTES, KIND_JSON, KIND_COUNTER, version, raw,
} = bitt;
