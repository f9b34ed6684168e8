package bitt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"

	"github.com/bitt-dev/bitt/bindings/go/internal/raw"
)

// The shared value mapping (bindings/VALUES.md): []byte is KindBytes as is;
// an integer is KindCounter (decimal ASCII); anything else JSON can hold is
// KindJSON (compact, non-ASCII kept, no HTML escaping). Decode gives JSON
// numbers as json.Number (their text), so a value read and written back
// keeps its kind and its bytes.

// Encode maps a Go value to (bytes, kind): []byte is KindBytes; any Go
// integer or *big.Int a KindCounter (its decimal text: the core refuses one
// outside int64); a json.Number, and anything else, KindJSON. A json.Number
// is written as is (the core checks it is JSON); floats in ES2015 text
// (2, 0.00001, 1e+21; a negative zero -0).
func Encode(v any) ([]byte, Kind, error) {
	switch x := v.(type) {
	case []byte:
		return x, KindBytes, nil
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		rv := reflect.ValueOf(x)
		if rv.CanInt() {
			return strconv.AppendInt(nil, rv.Int(), 10), KindCounter, nil
		}
		return strconv.AppendUint(nil, rv.Uint(), 10), KindCounter, nil
	case *big.Int:
		if x == nil {
			break // JSON null, as encoding/json writes it
		}
		return x.Append(nil, 10), KindCounter, nil
	case json.Number:
		return []byte(x), KindJSON, nil
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
		return nil, jsonError(v, err)
	}
	out := bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
	if bytes.Contains(out, []byte(`\u202`)) {
		out = unescapeSeparators(out)
	}
	return out, nil
}

// jsonError is the error of a value encoding/json refused, as in the
// argument table of bindings/ERRORS.md.
func jsonError(v any, err error) error {
	var uv *json.UnsupportedValueError
	if errors.As(err, &uv) && (uv.Str == "NaN" || uv.Str == "+Inf" || uv.Str == "-Inf") {
		return &Error{Code: ErrInvalid.Code, Message: "value: NaN and infinities are not JSON"}
	}
	var ut *json.UnsupportedTypeError
	if errors.As(err, &ut) {
		return &Error{Code: ErrInvalid.Code, Message: fmt.Sprintf("value: %s is not %s", ut.Type, valueTypes)}
	}
	return &Error{Code: ErrInvalid.Code, Message: fmt.Sprintf("value: %T is not %s (%v)", v, valueTypes, err)}
}

const valueTypes = "[]byte, an integer or a value encoding/json can write"

// unescapeSeparators writes U+2028 and U+2029 as themselves, as the other
// bindings do (encoding/json always escapes them, for JavaScript's sake).
// JSON text holds a backslash only as the start of an escape.
func unescapeSeparators(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if rest := b[i+1:]; bytes.HasPrefix(rest, []byte("u2028")) || bytes.HasPrefix(rest, []byte("u2029")) {
			out = append(out, 0xe2, 0x80, 0xa8+rest[4]-'8')
			i += 5
			continue
		}
		out = append(out, b[i], b[i+1])
		i++
	}
	return out
}

// EncodeCounter is the stored form of a counter.
func EncodeCounter(n int64) []byte { return strconv.AppendInt(nil, n, 10) }

// Decode maps (bytes, kind) back: KindBytes gives []byte, KindCounter an
// int64, KindJSON the parsed value (nil, bool, string, json.Number,
// []any, map[string]any, with every number a json.Number holding its text
// as stored), an unknown kind the raw bytes.
func Decode(data []byte, kind Kind) (any, error) {
	switch kind {
	case KindCounter:
		n, err := strconv.ParseInt(string(data), 10, 64)
		if err != nil {
			return nil, &Error{Code: ErrNotCounter.Code, Message: "counter is not a canonical int64 decimal: " + err.Error()}
		}
		return n, nil
	case KindJSON:
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		err := dec.Decode(&v)
		if err == nil && len(bytes.Trim(data[dec.InputOffset():], " \t\r\n")) > 0 {
			err = errors.New("data after the value")
		}
		if err != nil {
			return nil, &Error{Code: ErrInvalid.Code, Message: "value is not JSON: " + err.Error()}
		}
		return v, nil
	}
	return data, nil
}

// Decode is the entry's value through the shared mapping.
func (e *Entry) Decode() (any, error) { return Decode(e.Value, e.Kind) }

// JSON decodes a KindJSON value into v.
func (e *Entry) JSON(v any) error { return json.Unmarshal(e.Value, v) }

// Counter is the value of a KindCounter entry (ErrNotCounter otherwise,
// with the core's message).
func (e *Entry) Counter() (int64, error) {
	if e.Kind != KindCounter {
		return 0, &Error{Code: ErrNotCounter.Code, Message: "value of kind " + kindName(e.Kind) + " is not a counter"}
	}
	v, err := Decode(e.Value, e.Kind)
	if err != nil {
		return 0, err
	}
	return v.(int64), nil
}

func kindName(k Kind) string {
	switch k {
	case KindBytes:
		return "bytes"
	case KindJSON:
		return "json"
	case KindCounter:
		return "counter"
	}
	return strconv.Itoa(int(k))
}

// ---- tuple keys ---------------------------------------------------------

// Tuple encodes an ordered key from parts ([]byte, string, any Go integer
// or *big.Int within int64, float64/float32, bool) with the core's tuple
// codec: encoded keys sort like the tuples. Parts are numbered from 0 in
// errors ("tuple part 1" is the second).
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
			if rv.CanInt() {
				put(uint64(raw.BITT_TUPLE_INT), uint64(rv.Int()))
			} else if rv.Uint() > math.MaxInt64 {
				return nil, outsideInt64(i, strconv.FormatUint(rv.Uint(), 10))
			} else {
				put(uint64(raw.BITT_TUPLE_INT), rv.Uint())
			}
		case *big.Int:
			if x == nil {
				return nil, partTypeError(i, p)
			}
			if !x.IsInt64() {
				return nil, outsideInt64(i, x.String())
			}
			put(uint64(raw.BITT_TUPLE_INT), uint64(x.Int64()))
		default:
			return nil, partTypeError(i, p)
		}
	}
	_, r, err := recordCall(len(b)*2, func(scratch []byte) int { return raw.Bittw_go_tuple_encode(b, scratch) })
	if err != nil {
		return nil, err
	}
	return r.bytes(), nil
}

func partTypeError(part int, p any) error {
	return &Error{Code: ErrInvalid.Code, Message: fmt.Sprintf("tuple part %d: %T is not []byte, string, an integer, a float or a bool", part, p)}
}

// outsideInt64 is the argument error of an integer tuple part the core's
// int64 cannot hold (bindings/ERRORS.md).
func outsideInt64(part int, n string) error {
	return &Error{Code: ErrInvalid.Code, Message: fmt.Sprintf("tuple part %d: integer %s is outside the int64 range", part, n)}
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
