package bitt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"

	"github.com/bitt-dev/bitt/bindings/go/internal/raw"
)

// The shared value mapping (bindings/VALUES.md): []byte is KindBytes as is;
// an integer is KindCounter (decimal ASCII); anything else JSON can hold is
// KindJSON (compact, non-ASCII kept, no HTML escaping).

// Encode maps a Go value to (bytes, kind).
func Encode(v any) ([]byte, Kind, error) {
	switch x := v.(type) {
	case []byte:
		return x, KindBytes, nil
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		rv := reflect.ValueOf(x)
		if rv.CanInt() {
			return strconv.AppendInt(nil, rv.Int(), 10), KindCounter, nil
		}
		if rv.Uint() > math.MaxInt64 {
			return nil, 0, &Error{Code: -5, Message: "a counter must fit in int64"}
		}
		return strconv.AppendUint(nil, rv.Uint(), 10), KindCounter, nil
	}
	data, err := EncodeJSON(v)
	return data, KindJSON, err
}

// EncodeJSON is the JSON text of v as every binding writes it.
func EncodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, &Error{Code: -1, Message: "value is not JSON-serialisable: " + err.Error()}
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

// EncodeCounter is the stored form of a counter.
func EncodeCounter(n int64) []byte { return strconv.AppendInt(nil, n, 10) }

// Decode maps (bytes, kind) back: KindBytes gives []byte, KindCounter an
// int64, KindJSON the parsed value (any), an unknown kind the raw bytes.
func Decode(data []byte, kind Kind) (any, error) {
	switch kind {
	case KindCounter:
		n, err := strconv.ParseInt(string(data), 10, 64)
		if err != nil {
			return nil, &Error{Code: -4, Message: "not a counter: " + err.Error()}
		}
		return n, nil
	case KindJSON:
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, &Error{Code: -1, Message: "not JSON: " + err.Error()}
		}
		return v, nil
	}
	return data, nil
}

// Decode is the entry's value through the shared mapping.
func (e *Entry) Decode() (any, error) { return Decode(e.Value, e.Kind) }

// JSON decodes a KindJSON value into v.
func (e *Entry) JSON(v any) error { return json.Unmarshal(e.Value, v) }

// Counter is the value of a KindCounter entry (ErrNotCounter otherwise).
func (e *Entry) Counter() (int64, error) {
	if e.Kind != KindCounter {
		return 0, &Error{Code: -4, Message: "the entry is not a counter"}
	}
	n, err := strconv.ParseInt(string(e.Value), 10, 64)
	if err != nil {
		return 0, &Error{Code: -4, Message: "the entry is not a counter"}
	}
	return n, nil
}

// ---- tuple keys ---------------------------------------------------------

// Tuple encodes an ordered key from parts ([]byte, string, any integer,
// float64/float32, bool) with the core's tuple codec: encoded keys sort
// like the tuples.
func Tuple(parts ...any) ([]byte, error) {
	var b []byte
	put := func(t, v uint64) {
		b = binary.NativeEndian.AppendUint64(b, t)
		b = binary.NativeEndian.AppendUint64(b, v)
	}
	for i, p := range parts {
		switch x := p.(type) {
		case []byte:
			put(uint64(raw.BITT_TUPLE_BYTES), uint64(len(x)))
			b = append(b, x...)
		case string:
			put(uint64(raw.BITT_TUPLE_STRING), uint64(len(x)))
			b = append(b, x...)
		case bool:
			v := uint64(0)
			if x {
				v = 1
			}
			put(uint64(raw.BITT_TUPLE_BOOL), v)
		case float64:
			put(uint64(raw.BITT_TUPLE_FLOAT), math.Float64bits(x))
		case float32:
			put(uint64(raw.BITT_TUPLE_FLOAT), math.Float64bits(float64(x)))
		case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
			rv := reflect.ValueOf(x)
			if !rv.CanInt() && rv.Uint() > math.MaxInt64 {
				return nil, &Error{Code: -1, Message: fmt.Sprintf("tuple part %d: integer beyond int64", i)}
			}
			n := rv.Int
			if !rv.CanInt() {
				n = func() int64 { return int64(rv.Uint()) }
			}
			put(uint64(raw.BITT_TUPLE_INT), uint64(n()))
		default:
			return nil, &Error{Code: -1, Message: fmt.Sprintf("tuple part %d: %T is not []byte, string, integer, float or bool", i, p)}
		}
	}
	_, r, err := recordCall(len(b)*2, func(scratch []byte) int { return raw.Bittw_go_tuple_encode(b, scratch) })
	if err != nil {
		return nil, err
	}
	return r.bytes(), nil
}

// DecodeTuple decodes a tuple key into its parts: []byte, string, int64,
// float64 and bool.
func DecodeTuple(key []byte) ([]any, error) {
	_, r, err := recordCall(len(key)*2, func(scratch []byte) int { return raw.Bittw_go_tuple_decode(key, scratch) })
	if err != nil {
		return nil, err
	}
	var parts []any
	for {
		switch t := int(r.u64()); t {
		case 0:
			return parts, nil
		case raw.BITT_TUPLE_BYTES:
			parts = append(parts, r.bytes())
		case raw.BITT_TUPLE_STRING:
			s, _ := r.str()
			parts = append(parts, s)
		case raw.BITT_TUPLE_INT:
			parts = append(parts, r.i64())
		case raw.BITT_TUPLE_FLOAT:
			parts = append(parts, math.Float64frombits(r.u64()))
		case raw.BITT_TUPLE_BOOL:
			parts = append(parts, r.u64() != 0)
		default:
			return nil, &Error{Code: -1, Message: fmt.Sprintf("unknown tuple part type %d", t)}
		}
	}
}
