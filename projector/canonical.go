package projector

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
)

// CanonicalJSON returns the JSON text raw in the canonical form of RFC 8785
// (JSON Canonicalization Scheme), which the audit chain hashes so that a
// value hashes the same whoever wrote it and however: no whitespace;
// object members sorted by the UTF-16 code units of their names; strings
// with only '"', '\' and the controls below U+0020 escaped; numbers as
// IEEE 754 doubles written as ECMAScript writes them. Invalid UTF-8 and
// lone surrogate escapes read as U+FFFD, as encoding/json reads them; a
// number beyond the range of a double is an error. docs/projector.md
// ("Audit chain") states the same rules for verifiers outside Argosy.
func CanonicalJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("canonical JSON: data after the value")
	}
	var b bytes.Buffer
	if err := writeCanonical(&b, v); err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	return b.Bytes(), nil
}

func writeCanonical(b *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case json.Number:
		return writeNumber(b, v)
	case string:
		writeString(b, v)
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCanonical(b, x); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		return writeObject(b, v)
	default:
		return fmt.Errorf("unexpected %T", v)
	}
	return nil
}

func writeObject(b *bytes.Buffer, m map[string]any) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareUTF16)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(b, k)
		b.WriteByte(':')
		if err := writeCanonical(b, m[k]); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

// compareUTF16 orders strings by their UTF-16 code units, as RFC 8785
// sorts member names. It differs from Go's byte order only where a
// character above U+FFFF meets one from U+E000 to U+FFFF.
func compareUTF16(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

// writeString writes s as ECMAScript's JSON.stringify does. encoding/json
// has already turned invalid UTF-8 and lone surrogates into U+FFFD.
func writeString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// writeNumber writes n as the nearest double, as ECMAScript's
// Number.prototype.toString does: the shortest digits that read back,
// plainly from 1e-6 to below 1e21, with an exponent outside, and -0 as 0.
// encoding/json formats float64 this way, but for -0.
func writeNumber(b *bytes.Buffer, n json.Number) error {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) {
		return fmt.Errorf("number %s has no IEEE 754 double", n)
	}
	if f == 0 {
		b.WriteByte('0')
		return nil
	}
	out, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("number %s: %w", n, err)
	}
	b.Write(out)
	return nil
}
