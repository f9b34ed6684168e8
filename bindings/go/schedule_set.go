package bitt

// Cron schedules and schedules with a topic (bitt.h 0.6): the options of
// Schedules.Upsert beyond an interval's.

import "github.com/bitt-dev/bitt/bindings/go/internal/raw"

// Cron makes Schedules.Upsert's schedule run at the minutes of a 5-field
// cron expression in UTC (bitt.h, "schedules": minute hour day-of-month
// month day-of-week, lists, ranges, steps, names, @daily and the other
// macros) instead of every interval: the interval must then be 0
// (ErrInvalid otherwise, as an expression outside the syntax is, with a
// message naming the field). The expression is kept as written: a changed
// text restarts the cadence.
func Cron(expr string) Option { return func(o *options) { o.cron = &expr } }

// ScheduleTopic makes each claim of Schedules.Upsert's schedule enqueue its
// payload on topic in the claim's commit (one message per occurrence, with
// the dedup key "<key>@<occurrence ms>", the MaxAttempts and Priority
// options given to Upsert); Schedule.MessageID names it after the claim.
// An Upsert without it drops the topic (the cadence stays).
func ScheduleTopic(topic string) Option { return func(o *options) { o.stopic = &topic } }

// optName is an optional name for bitt_go.i: nil when not given, else its
// bytes (an empty name too, for the core to refuse).
func optName(s *string) []byte {
	if s == nil {
		return nil
	}
	return append(make([]byte, 0, len(*s)), *s...)
}

// scheduleSet is bitt_schedule_set with the options Upsert collected.
func (sc *Schedules) scheduleSet(key string, interval int64, payload []byte, firstRunAt int64, o options) int {
	return raw.Bittw_go_schedule_set(sc.s.box(), key, interval, payload, int(o.kind), optName(o.cron), firstRunAt,
		optName(o.stopic), uint(o.maxAttempts), int(o.priority))
}
