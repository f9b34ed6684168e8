package bitt

// Queue retention (bitt.h 0.6): an ack's result, the done messages kept by
// the store URL option queue_done_retention, dead letters dropped by
// queue_dead_retention, and Purge, which drops at once what outlived them.

import (
	"context"
	"encoding/json"

	"github.com/bitt-dev/bitt/bindings/go/internal/raw"
)

// AckResult gives an ack (Queue.Ack, Txn.QueueAck) a result: data of kind
// as stored (nil: no result). The core checks it as any value of its kind
// (JSON text, a counter's decimal, max_value_size).
func AckResult(data []byte, kind Kind) Option {
	return func(o *options) {
		o.result, o.resultKind, o.resultSet, o.resultErr = data, kind, data != nil, nil
	}
}

// AckValue gives an ack a result encoded by the shared value mapping
// (Encode, bindings/VALUES.md): []byte as is, an integer a counter, any
// other value JSON. nil is no result (JSON null: AckResult([]byte("null"),
// KindJSON)). A value Encode refuses fails the ack with that error, before
// anything is sent.
func AckValue(v any) Option {
	return func(o *options) {
		o.result, o.resultKind, o.resultSet, o.resultErr = nil, 0, false, nil
		if v == nil {
			return
		}
		data, kind, err := Encode(v)
		if err != nil {
			o.resultErr = err
			return
		}
		if data == nil {
			data = []byte{} // an empty []byte is a result, not none
		}
		o.result, o.resultKind, o.resultSet = data, kind, true
	}
}

// DecodeResult is a done message's result through the shared mapping
// (Decode, as a payload or an entry's value): nil, nil when it has none.
func (m *Message) DecodeResult() (any, error) {
	if m.Result == nil {
		return nil, nil
	}
	return Decode(m.Result, m.ResultKind)
}

// ResultJSON decodes a KindJSON result into v.
func (m *Message) ResultJSON(v any) error { return json.Unmarshal(m.Result, v) }

// Purge drops the done messages and dead letters of topic that outlived
// their retention (queue_done_retention, queue_dead_retention) and says
// how many went. Every queue call on a topic does so first, and the store
// now and then on every topic: Purge does it at once.
func (q *Queue) Purge(ctx context.Context, topic string) (uint64, error) {
	return q.purge(ctx, []byte(topic))
}

// PurgeAll is Purge on every topic.
func (q *Queue) PurgeAll(ctx context.Context) (uint64, error) { return q.purge(ctx, nil) }

func (q *Queue) purge(ctx context.Context, topic []byte) (uint64, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	var n uint64
	_, err := q.s.status(raw.Bittw_go_queue_purge(q.s.box(), topic, &n))
	return n, err
}
