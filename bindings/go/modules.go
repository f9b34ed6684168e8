package bitt

import (
	"context"
	"encoding/json"
	"time"

	"github.com/bitt-dev/bitt/bindings/go/internal/raw"
)

// ---- leases -----------------------------------------------------------

// Lease is a held lease: fence writes with its Epoch.
type Lease struct {
	Name, Owner string
	Epoch       uint64
	ExpiresAt   time.Time // on the store's clock
}

// Leases is the lease namespace of a store.
type Leases struct{ s *Store }

// Acquire takes lease name for owner for ttl: nil, nil while another holds it.
func (l *Leases) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (*Lease, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	var epoch uint64
	var exp int64
	st, err := l.s.status(raw.Bitt_lease_acquire(l.s.box(), name, owner, ms(ttl), &epoch, &exp))
	if err != nil || st != 0 {
		return nil, err
	}
	return &Lease{name, owner, epoch, timeOf(exp)}, nil
}

// Renew extends a held lease; it returns the new expiry (ErrLeaseLost when
// owner no longer holds it at epoch).
func (l *Leases) Renew(ctx context.Context, name, owner string, epoch uint64, ttl time.Duration) (time.Time, error) {
	if err := ctxErr(ctx); err != nil {
		return time.Time{}, err
	}
	var exp int64
	if _, err := l.s.status(raw.Bitt_lease_renew(l.s.box(), name, owner, epoch, ms(ttl), &exp)); err != nil {
		return time.Time{}, err
	}
	return timeOf(exp), nil
}

// Release gives a held lease up.
func (l *Leases) Release(ctx context.Context, name, owner string, epoch uint64) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return l.s.done(raw.Bitt_lease_release(l.s.box(), name, owner, epoch))
}

// Get reads the live holder of lease name: nil, nil when none.
func (l *Leases) Get(ctx context.Context, name string) (*Lease, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	owner, epoch, exp, st, err := l.s.leaseGet(name)
	if err != nil || st != 0 {
		return nil, err
	}
	return &Lease{name, string(owner), epoch, timeOf(exp)}, nil
}

func (s *Store) leaseGet(name string) ([]byte, uint64, int64, int, error) {
	var epoch uint64
	var exp int64
	st, r, err := s.record(len(name), func(scratch []byte) int {
		return raw.Bitt_lease_get(s.box(), name, scratch, &epoch, &exp)
	})
	if err != nil {
		return nil, 0, 0, st, err
	}
	return r.bytes(), epoch, exp, st, nil
}

// ---- outbox -----------------------------------------------------------

// Park reasons.
const (
	ParkPoison  = 1 // the handler keeps failing on it
	ParkInvalid = 2 // it can never be handled as it is
)

// Outbox is the outbox namespace of a store.
type Outbox struct{ s *Store }

// Append appends an event to stream on its own; it returns its sequence
// number.
func (o *Outbox) Append(ctx context.Context, stream string, event []byte, opts ...Option) (uint64, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	op := collect(opts)
	var seq uint64
	_, err := o.s.status(raw.Bitt_outbox_append(o.s.box(), stream, event, int(op.kind), &seq))
	return seq, err
}

// Pending lists pending events in sequence order (limit 0: 100).
func (o *Outbox) Pending(ctx context.Context, stream string, limit int) ([]*Message, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	return o.s.messagesCall(func(scratch []byte) int {
		return raw.Bitt_outbox_pending(o.s.box(), stream, uint(limit), scratch)
	})
}

func (o *Outbox) seqCall(ctx context.Context, f func(out *uint64) int) (uint64, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	var n uint64
	_, err := o.s.status(f(&n))
	return n, err
}

// Ack deletes pending events; it says how many were pending.
func (o *Outbox) Ack(ctx context.Context, stream string, seqs []uint64) (uint64, error) {
	if seqs == nil {
		seqs = []uint64{}
	}
	return o.seqCall(ctx, func(n *uint64) int { return raw.Bitt_outbox_ack(o.s.box(), stream, seqs, n) })
}

// Fail records a failed attempt of a pending event, to be tried again at
// nextAttemptAt (on the store's clock; the zero time: now): false when it
// is not pending.
func (o *Outbox) Fail(ctx context.Context, stream string, seq uint64, errText string, nextAttemptAt time.Time) (bool, error) {
	if err := ctxErr(ctx); err != nil {
		return false, err
	}
	st, err := o.s.status(raw.Bitt_outbox_fail(o.s.box(), stream, seq, optBytes(errText), unixMs(nextAttemptAt)))
	return err == nil && st == 0, err
}

// Park moves a pending event to the parked list: false when it is not pending.
func (o *Outbox) Park(ctx context.Context, stream string, seq uint64, reason int, errText string) (bool, error) {
	if err := ctxErr(ctx); err != nil {
		return false, err
	}
	st, err := o.s.status(raw.Bitt_outbox_park(o.s.box(), stream, seq, reason, optBytes(errText)))
	return err == nil && st == 0, err
}

// Parked lists parked events (reason 0: any; limit 0: 100).
func (o *Outbox) Parked(ctx context.Context, stream string, reason, limit int) ([]*Message, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	return o.s.messagesCall(func(scratch []byte) int {
		return raw.Bitt_outbox_parked(o.s.box(), stream, reason, uint(limit), scratch)
	})
}

// Retry puts parked events back to pending (nil: all of the stream).
func (o *Outbox) Retry(ctx context.Context, stream string, seqs []uint64) (uint64, error) {
	return o.seqCall(ctx, func(n *uint64) int { return raw.Bitt_outbox_retry(o.s.box(), stream, seqs, n) })
}

// Discard deletes parked events (nil: all of the stream).
func (o *Outbox) Discard(ctx context.Context, stream string, seqs []uint64) (uint64, error) {
	return o.seqCall(ctx, func(n *uint64) int { return raw.Bitt_outbox_discard(o.s.box(), stream, seqs, n) })
}

// Counts says how many events of stream are pending and parked.
func (o *Outbox) Counts(ctx context.Context, stream string) (pending, parked uint64, err error) {
	if err = ctxErr(ctx); err != nil {
		return 0, 0, err
	}
	_, err = o.s.status(raw.Bitt_outbox_counts(o.s.box(), stream, &pending, &parked))
	return pending, parked, err
}

// ---- budgets ----------------------------------------------------------

// Budgets is the rate-budget namespace of a store.
type Budgets struct{ s *Store }

// Take takes n tokens of budget name (capacity, refill tokens per period):
// 0 when taken, else how long to wait until n tokens are there.
func (b *Budgets) Take(ctx context.Context, name string, capacity, refill int64, period time.Duration, n int64) (time.Duration, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	var wait int64
	st, err := b.s.status(raw.Bitt_budget_take(b.s.box(), name, capacity, refill, ms(period), n, &wait))
	if err != nil || st == 0 {
		return 0, err
	}
	return time.Duration(wait) * time.Millisecond, nil
}

// ---- schedules --------------------------------------------------------

// Schedule is a recurring job.
type Schedule struct {
	Key        string
	Interval   time.Duration // 0 for a cron schedule
	Payload    []byte
	Kind       Kind
	NextRunAt  time.Time // the next occurrence not yet claimed
	Occurrence time.Time // after Claim: the occurrence claimed (zero otherwise)
	Cron       string    // the cron expression (Cron); "" for an interval schedule
	Topic      string    // where each occurrence is enqueued (ScheduleTopic); "" for none
	MessageID  uint64    // after Claim of a schedule with a topic: the occurrence's message (0 otherwise)
}

// JSON decodes a KindJSON payload into v.
func (s *Schedule) JSON(v any) error { return json.Unmarshal(s.Payload, v) }

// Schedules is the schedule namespace of a store.
type Schedules struct{ s *Store }

// Upsert creates or updates schedule key, run every interval, or, with
// option Cron (interval 0), at a cron expression's minutes. A new
// schedule, or one whose interval or cron changes, next runs at firstRunAt
// (the zero time: now + interval, or the first cron minute after now); an
// unchanged one keeps the next run time. Options: WithKind (the payload's),
// Cron, ScheduleTopic, and with a topic MaxAttempts and Priority of its
// messages; the payload, topic, max attempts and priority are replaced.
func (sc *Schedules) Upsert(ctx context.Context, key string, interval time.Duration, payload []byte, firstRunAt time.Time, opts ...Option) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	o := collect(opts)
	return sc.s.done(sc.scheduleSet(key, ms(interval), payload, unixMs(firstRunAt), o))
}

func (s *Store) scheduleCall(call func([]byte) int) (*Schedule, int, error) {
	st, r, err := s.record(512, call)
	if err != nil {
		return nil, st, err
	}
	return r.schedule(), st, nil
}

// Claim claims the earliest due schedule whose key starts with prefix (""
// for any): nil, nil when none is due.
func (sc *Schedules) Claim(ctx context.Context, prefix string) (*Schedule, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	s, _, err := sc.s.scheduleCall(func(scratch []byte) int {
		return raw.Bitt_schedule_claim(sc.s.box(), optBytes(prefix), scratch)
	})
	return s, err
}

// Get reads schedule key: nil, nil when there is none.
func (sc *Schedules) Get(ctx context.Context, key string) (*Schedule, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	s, _, err := sc.s.scheduleCall(func(scratch []byte) int {
		return raw.Bitt_schedule_get(sc.s.box(), key, scratch)
	})
	return s, err
}

// List lists every schedule in key order.
func (sc *Schedules) List(ctx context.Context) ([]*Schedule, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	_, r, err := sc.s.record(4096, func(scratch []byte) int { return raw.Bittw_schedule_list(sc.s.box(), scratch) })
	if err != nil {
		return nil, err
	}
	out := make([]*Schedule, int(r.u64()))
	for i := range out {
		out[i] = r.schedule()
	}
	return out, nil
}

// Delete deletes schedule key: true when there was one.
func (sc *Schedules) Delete(ctx context.Context, key string) (bool, error) {
	if err := ctxErr(ctx); err != nil {
		return false, err
	}
	st, err := sc.s.status(raw.Bitt_schedule_delete(sc.s.box(), key))
	return err == nil && st == 0, err
}

// ---- clock ------------------------------------------------------------

// Clock is the store's clock (millisecond precision); tests install a
// manual one.
type Clock struct{ s *Store }

// SetManual installs a manual clock at now (which the core needs at or
// after the Unix epoch).
func (c *Clock) SetManual(now time.Time) error {
	return c.s.done(raw.Bitt_clock_set_manual(c.s.box(), now.UnixMilli()))
}

// Advance moves the manual clock forward.
func (c *Clock) Advance(d time.Duration) error {
	return c.s.done(raw.Bitt_clock_advance(c.s.box(), ms(d)))
}

// UseSystem goes back to the system clock.
func (c *Clock) UseSystem() error { return c.s.done(raw.Bitt_clock_use_system(c.s.box())) }

// Now is the store's time.
func (c *Clock) Now() (time.Time, error) {
	var now int64
	if _, err := c.s.status(raw.Bitt_clock_now(c.s.box(), &now)); err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(now).UTC(), nil
}
