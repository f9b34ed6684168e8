package bitt

import (
	"encoding/binary"
	"math"
	"runtime"

	"github.com/bitt-dev/bitt/bindings/go/internal/raw"
)

// Structured results come back packed (see bindings/go/bitt_go.i): a
// 16-byte header (body length, address of a malloc'd body or 0) and a body
// of uint64 fields and length-prefixed bytes.

const scratchSize = 256

func newScratch(extra int) []byte { return make([]byte, scratchSize+extra) }

// recordBody returns the body of a packed result, copying and freeing it
// when C had to put it in malloc'd memory.
func recordBody(scratch []byte) ([]byte, error) {
	n := binary.NativeEndian.Uint64(scratch[0:8])
	at := binary.NativeEndian.Uint64(scratch[8:16])
	if n == math.MaxUint64 {
		return nil, &Error{Code: -2, Message: "out of memory while copying a result"}
	}
	if at == 0 {
		return scratch[16 : 16+n : 16+n], nil
	}
	b := make([]byte, n)
	raw.Bittw_go_rec_take(at, b)
	return b, nil
}

// recordCall runs a raw call that packs its result into a scratch buffer
// of scratchSize+extra bytes: the status (>= 0) and a reader over the
// result, or the error. The body is always taken (a malloc'd one freed).
func recordCall(extra int, call func(scratch []byte) int) (int, reader, error) {
	scratch := newScratch(extra)
	rc := call(scratch)
	body, berr := recordBody(scratch)
	st, err := status(rc)
	if err == nil {
		err = berr
	}
	if err != nil {
		return st, reader{}, err
	}
	return st, reader{b: body}, nil
}

// record is recordCall for a call on the store's box.
func (s *Store) record(extra int, call func(scratch []byte) int) (int, reader, error) {
	st, r, err := recordCall(extra, call)
	runtime.KeepAlive(s.h)
	return st, r, err
}

type reader struct {
	b   []byte
	off int
}

func (r *reader) u64() uint64 {
	v := binary.NativeEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v
}

func (r *reader) i64() int64 { return int64(r.u64()) }

// bytes: nil for a NULL field; the slice aliases the body (its capacity is
// cut so that appending to it copies).
func (r *reader) bytes() []byte {
	n := r.u64()
	if n == math.MaxUint64 {
		return nil
	}
	v := r.b[r.off : r.off+int(n) : r.off+int(n)]
	r.off += int(n)
	return v
}

func (r *reader) str() (string, bool) {
	b := r.bytes()
	return string(b), b != nil
}

func (r *reader) entry() *Entry {
	if r.u64() == 0 {
		return nil
	}
	e := &Entry{Key: r.bytes(), Value: r.bytes()}
	e.Kind = Kind(r.u64())
	e.Version = r.u64()
	e.ExpiresAt = timeOf(r.i64())
	return e
}

func (r *reader) entries() ([]*Entry, string, bool) {
	n := int(r.u64())
	es := make([]*Entry, n)
	for i := range es {
		es[i] = r.entry()
	}
	c, ok := r.str()
	return es, c, ok
}

func (r *reader) message() *Message {
	if r.u64() == 0 {
		return nil
	}
	m := &Message{ID: r.u64()}
	m.Topic, _ = r.str()
	m.Payload = r.bytes()
	m.Kind = Kind(r.u64())
	m.Token, m.hasToken = r.str()
	m.Attempts = uint32(r.u64())
	m.MaxAttempts = uint32(r.u64())
	m.LastError, m.hasLastError = r.str()
	m.CreatedAt = timeOf(r.i64())
	m.DueAt = timeOf(r.i64())
	m.FailedAt = timeOf(r.i64())
	m.ParkReason = int(r.u64())
	m.State = MessageState(r.u64())
	m.Priority = int32(r.i64())
	m.DoneAt = timeOf(r.i64())
	m.Result = r.bytes()
	m.ResultKind = Kind(r.i64())
	return m
}

func (r *reader) messages() []*Message {
	ms := make([]*Message, int(r.u64()))
	for i := range ms {
		ms[i] = r.message()
	}
	return ms
}

func (r *reader) schedule() *Schedule {
	if r.u64() == 0 {
		return nil
	}
	s := &Schedule{}
	s.Key, _ = r.str()
	s.Interval = durationOf(r.i64())
	s.Payload = r.bytes()
	s.Kind = Kind(r.u64())
	s.NextRunAt = timeOf(r.i64())
	s.Occurrence = timeOf(r.i64())
	s.Cron, _ = r.str()
	s.Topic, _ = r.str()
	s.MessageID = r.u64()
	return s
}
