package hub

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"

	sigsjson "sigs.k8s.io/json"

	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/internal/validate"
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

// checkShape checks a body's tokens once, before anything is decoded,
// with the same walk validation checks a manifest with (validate.Shape):
// one JSON value followed by whitespace only, nested no deeper than
// api.MaxDepth below its own top (a manifest it carries may be as deep as
// validation allows), and no key given twice in one object (encoding/json
// would keep the last, so that two readers of the same body could
// disagree on what it asked). Its cost is linear in the body.
func checkShape(body []byte) error {
	// The request's own object is one level above the manifest it
	// carries, whose depth api.MaxDepth counts from the manifest's top.
	err := validate.Shape(body, api.MaxDepth+1, 0)
	var se *validate.ShapeError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, validate.ErrTrailing):
		return failf(http.StatusBadRequest, "the body holds %v", err)
	case !errors.As(err, &se):
		return decodeError(err)
	}
	field := se.Field
	if field == "" {
		field = "body"
	}
	field = clip(field, maxEchoedField)
	if errors.Is(se, validate.ErrDuplicate) {
		return invalid(field, "given twice: give each field once")
	}
	return invalid(field, fmt.Sprintf("nested deeper than %d objects and arrays, the most the hub takes", api.MaxDepth))
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
