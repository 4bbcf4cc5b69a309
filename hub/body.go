package hub

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	sigsjson "sigs.k8s.io/json"

	"github.com/argosyproj/argosy/hub/api"
)

// limitBody bounds what the handlers may read of r's body to
// api.MaxBodyBytes. Given the response writer, the server closes the
// connection after answering a body past the limit instead of reading
// the rest of it.
func limitBody(w http.ResponseWriter, r *http.Request) {
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, api.MaxBodyBytes)
	}
}

// decodeBody decodes a JSON request body strictly into v: one JSON value
// and nothing after it but whitespace, no deeper than api.MaxDepth, no
// field given twice, no field v does not have (names match exactly, as
// the API documents them), each of the type v wants. A body longer than
// api.MaxBodyBytes is a 413 and is not read further. Each refusal names
// the field where it can.
func decodeBody(r *http.Request, v any) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	return decodeBytes(body, v)
}

// decodeBytes is decodeBody on a body read already.
func decodeBytes(body []byte, v any) error {
	if err := checkShape(body); err != nil {
		return err
	}
	if err := refuseNull(body); err != nil {
		return err
	}
	body = wholeNumbers(body)
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	// encoding/json matches field names without regard to case, so that
	// "Clusters" after "clusters" would silently take its place: decoded
	// again case-sensitively into a throwaway, a name that matched only
	// by case is an unknown field.
	strict, err := sigsjson.UnmarshalStrict(body, reflect.New(reflect.TypeOf(v).Elem()).Interface(), sigsjson.DisallowUnknownFields)
	if err != nil {
		return decodeError(err)
	}
	if len(strict) == 0 {
		return nil
	}
	var fe sigsjson.FieldError
	if errors.As(strict[0], &fe) {
		return invalid(clip(fe.FieldPath(), maxEchoedField), "unknown field (field names are case-sensitive)")
	}
	return failf(http.StatusBadRequest, "the body: %v", clip(strict[0].Error(), maxEchoedField))
}

// readBody reads the whole body, up to api.MaxBodyBytes.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, failf(http.StatusBadRequest, "the body is empty: want a JSON object")
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, api.MaxBodyBytes))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, &apiError{status: http.StatusRequestEntityTooLarge, body: api.Error{
			Error: fmt.Sprintf("the body is longer than the hub takes: at most %d bytes (%d MiB)", api.MaxBodyBytes, api.MaxBodyBytes>>20),
			Hint:  "send a smaller request: split a manifest's inline values into the repository it deploys from"}}
	case err != nil:
		return nil, failf(http.StatusBadRequest, "reading the body: %v", err)
	}
	return body, nil
}

func decodeError(err error) *apiError {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		return invalid(clip(te.Field, maxEchoedField), fmt.Sprintf("want a %s, got a JSON %s", te.Type, clip(te.Value, 64)))
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return failf(http.StatusBadRequest, "the body is not JSON: %v", err)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return invalid(clip(f, maxEchoedField), "unknown field")
	}
	return failf(http.StatusBadRequest, "reading the body: %v", err)
}

// frame is one object or array checkShape is in.
type frame struct {
	object  bool
	wantKey bool
	key     string
	index   int
	keys    map[string]struct{}
}

// checkShape walks a body's tokens once, before anything is decoded, and
// refuses a body that is not one JSON value followed by whitespace, that
// nests deeper than api.MaxDepth below its own top (a manifest it carries
// may be as deep as validation allows), or that gives a key twice in one object
// (encoding/json would keep the last, so that two readers of the same
// body could disagree on what it asked). Its cost is linear in the body.
func checkShape(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return decodeError(err)
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if s, ok := tok.(string); ok && top != nil && top.object && top.wantKey {
			if _, dup := top.keys[s]; dup {
				return invalid(clip(fieldPath(stack, s), maxEchoedField), "given twice: give each field once")
			}
			top.keys[s], top.key, top.wantKey = struct{}{}, s, false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			// The request's own object is one level above the manifest
			// it carries, whose depth api.MaxDepth counts from the
			// manifest's top.
			if len(stack) >= api.MaxDepth+1 {
				return invalid(clip(fieldPath(stack, ""), maxEchoedField), fmt.Sprintf("nested deeper than %d objects and arrays, the most the hub takes", api.MaxDepth))
			}
			f := frame{object: tok == json.Delim('{'), wantKey: true}
			if f.object {
				f.keys = map[string]struct{}{}
			}
			stack = append(stack, f)
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			break
		}
		// A value ended: the enclosing object wants its next key, the
		// enclosing array its next element.
		top = &stack[len(stack)-1]
		top.wantKey = true
		if !top.object {
			top.index++
		}
	}
	if rest := bytes.TrimLeft(body[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return failf(http.StatusBadRequest, "the body holds more than one JSON value: %d bytes follow the first, where only whitespace may", len(rest))
	}
	return nil
}

// fieldPath names the value the stack is at, with key under it if not "",
// as the API's field errors do: clusters[2], manifest.spec.source.
func fieldPath(stack []frame, key string) string {
	var b strings.Builder
	add := func(k string) {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(k)
	}
	for i, f := range stack {
		if key != "" && i == len(stack)-1 && f.object {
			break // its key now is the one given twice
		}
		if f.object {
			add(f.key)
		} else {
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
		}
	}
	if key != "" {
		add(key)
	}
	if b.Len() == 0 {
		return "body"
	}
	return b.String()
}

// maxEchoedField bounds a field name an answer echoes: the name is the
// caller's, as long as the body let it be.
const maxEchoedField = 512

// maxEchoedValue bounds a value an answer quotes back (a cluster's name,
// an enum's value): enough to recognise it.
const maxEchoedValue = 128

// clip returns s cut to at most n bytes, on a rune boundary, with "…"
// when it was cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
