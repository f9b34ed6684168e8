package bitt

import (
	"context"
	"encoding/binary"
	"iter"
	"time"

	"github.com/bitt-dev/bitt/bindings/go/internal/raw"
)

// Entry is a stored value with its metadata.
type Entry struct {
	Key       []byte
	Value     []byte
	Kind      Kind
	Version   uint64    // the versionstamp of the write that made it (>= 1)
	ExpiresAt time.Time // on the store's clock; zero: never
}

// KV is the key-value namespace of a store.
type KV struct{ s *Store }

func (kv *KV) getLike(ctx context.Context, key []byte,
	call func(uintptr, []byte, []byte) int) (*Entry, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	_, r, err := kv.s.record(len(key), func(scratch []byte) int { return call(kv.s.box(), key, scratch) })
	if err != nil {
		return nil, err
	}
	return r.entry(), nil
}

// Get reads a key: nil, nil when it is absent or expired.
func (kv *KV) Get(ctx context.Context, key []byte) (*Entry, error) {
	if kv.s.comb == nil {
		return kv.getLike(ctx, key, raw.Bitt_kv_get)
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	op := kvOps.Get().(*kvOp)
	op.key = key
	kv.s.comb.do(ctx, op)
	e, err := op.entry, op.err
	op.reset()
	return e, err
}

// Take reads and deletes a key in one step: nil, nil when absent.
func (kv *KV) Take(ctx context.Context, key []byte) (*Entry, error) {
	return kv.getLike(ctx, key, raw.Bitt_kv_take)
}

// Set writes a value (options TTL, WithKind); it returns the new version.
func (kv *KV) Set(ctx context.Context, key, value []byte, opts ...Option) (uint64, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	o := collect(opts)
	if kv.s.comb == nil || kv.s.comb.getMany {
		return kv.set(key, value, o.kind, o.ttl)
	}
	op := kvOps.Get().(*kvOp)
	op.set, op.key, op.val, op.kind, op.ttl = true, key, value, o.kind, o.ttl
	kv.s.comb.do(ctx, op)
	ver, err := op.version, op.err
	op.reset()
	return ver, err
}

// set is one plain cgo call of bitt_kv_set.
func (kv *KV) set(key, value []byte, kind Kind, ttl int64) (uint64, error) {
	var ver uint64
	_, err := kv.s.status(raw.Bitt_kv_set(kv.s.box(), key, value, int(kind), ttl, &ver))
	return ver, err
}

// direct makes a combined call on its own (no other call was queued).
func (kv *KV) direct(op *kvOp) {
	if op.set {
		op.version, op.err = kv.set(op.key, op.val, op.kind, op.ttl)
		return
	}
	op.entry, op.err = kv.getLike(context.Background(), op.key, raw.Bitt_kv_get)
}

// SetValue writes any value through the shared value mapping (Encode).
func (kv *KV) SetValue(ctx context.Context, key []byte, v any, opts ...Option) (uint64, error) {
	data, kind, err := Encode(v)
	if err != nil {
		return 0, err
	}
	return kv.Set(ctx, key, data, append(opts, WithKind(kind))...)
}

// Add writes the value only if the key is absent (or expired): the new
// version and true, or 0 and false when a live value was there.
func (kv *KV) Add(ctx context.Context, key, value []byte, opts ...Option) (uint64, bool, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, false, err
	}
	o := collect(opts)
	var ver uint64
	st, err := kv.s.status(raw.Bitt_kv_add(kv.s.box(), key, value, int(o.kind), o.ttl, &ver))
	return ver, err == nil && st == 0, err
}

// Delete deletes a key: true when it was there.
func (kv *KV) Delete(ctx context.Context, key []byte) (bool, error) {
	if err := ctxErr(ctx); err != nil {
		return false, err
	}
	st, err := kv.s.status(raw.Bitt_kv_delete(kv.s.box(), key))
	return err == nil && st == 0, err
}

// Increment adds delta to a counter (an absent key counts as 0) and returns
// the new value. TTL applies when the key is created.
func (kv *KV) Increment(ctx context.Context, key []byte, delta int64, opts ...Option) (int64, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	o := collect(opts)
	var v int64
	var ver uint64
	_, err := kv.s.status(raw.Bitt_kv_increment(kv.s.box(), key, delta, o.ttl, &v, &ver))
	return v, err
}

// GetMany reads keys from one snapshot: one slot per key, nil for a miss.
func (kv *KV) GetMany(ctx context.Context, keys [][]byte) ([]*Entry, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	es, _, _, err := kv.s.getMany(keys)
	return es, err
}

func (s *Store) getMany(keys [][]byte) ([]*Entry, string, bool, error) {
	return s.entriesCall(func(scratch []byte) int {
		return raw.Bittw_kv_get_many(s.box(), packKeys(keys), scratch)
	})
}

// packKeys lays keys out as (uint64 length, bytes) pairs: C gets one Go
// buffer without Go pointers inside.
func packKeys(keys [][]byte) []byte {
	n := 0
	for _, k := range keys {
		n += 8 + len(k)
	}
	b := make([]byte, 0, n+1)
	for _, k := range keys {
		b = binary.NativeEndian.AppendUint64(b, uint64(len(k)))
		b = append(b, k...)
	}
	return b
}

func (s *Store) entriesCall(call func([]byte) int) ([]*Entry, string, bool, error) {
	_, r, err := s.record(4096, call)
	if err != nil {
		return nil, "", false, err
	}
	es, c, ok := r.entries()
	return es, c, ok, nil
}

// ListOptions selects a range of keys: a Prefix, and/or Start (inclusive)
// and End (exclusive); nil means not given. Limit is the page size (0: 100).
type ListOptions struct {
	Prefix, Start, End []byte
	Limit              int
	Reverse            bool
	Cursor             string // continue after a page (from Page)
}

// Page lists one page: its entries and the cursor of the next page ("" when
// this was the last).
func (kv *KV) Page(ctx context.Context, o ListOptions) ([]*Entry, string, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, "", err
	}
	es, c, _, err := kv.s.listPage(o.Prefix, o.Start, o.End, o.Limit, o.Reverse, optBytes(o.Cursor))
	return es, c, err
}

func (s *Store) listPage(prefix, start, end []byte, limit int, reverse bool,
	cursor []byte) ([]*Entry, string, bool, error) {
	rev := 0
	if reverse {
		rev = 1
	}
	return s.entriesCall(func(scratch []byte) int {
		return raw.Bittw_kv_list(s.box(), prefix, start, end, uint(limit), rev, cursor, scratch)
	})
}

// List iterates over every entry of the selection, page by page; it stops
// at the first error, which it yields.
func (kv *KV) List(ctx context.Context, o ListOptions) iter.Seq2[*Entry, error] {
	return func(yield func(*Entry, error) bool) {
		cursor := o.Cursor
		for {
			o.Cursor = cursor
			es, next, err := kv.Page(ctx, o)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, e := range es {
				if !yield(e, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			cursor = next
		}
	}
}

// PurgeExpired deletes expired entries now and says how many.
func (kv *KV) PurgeExpired(ctx context.Context) (uint64, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	var n uint64
	_, err := kv.s.status(raw.Bitt_kv_purge_expired(kv.s.box(), &n))
	return n, err
}

// optBytes: "" is "not given" (NULL), anything else its bytes.
func optBytes(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}
