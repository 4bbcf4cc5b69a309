package hub

import (
	"bytes"
	"encoding/json"
	"math/big"
	"net/http"
	"strconv"
	"strings"
)

// refuseNull refuses a body that is JSON null, or an object with a member
// whose value is null: encoding/json would take either as absent (the
// zero request, a field left out), where the API's schemas take neither.
// A body that is not JSON is left to the decoder to refuse.
func refuseNull(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	switch {
	case err != nil:
		return nil
	case tok == nil:
		return failf(http.StatusBadRequest, "the body is null: want a JSON object")
	case tok != json.Delim('{'):
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if bytes.Equal(v, []byte("null")) {
			name, _ := key.(string)
			return invalid(name, "null: give a value or leave the field out")
		}
	}
	return nil
}

// wholeNumbers rewrites each member of a body's top-level object whose
// value is a number with a fraction or exponent but a whole value (3.0,
// 1e2) as that whole number (3, 100): the documents' schemas, JSON
// Schema's integer, take such a number as an integer, where encoding/json
// refuses it for an integer field. The request types' integer fields are
// all at the top level. A member with any other value, or a number whose
// exponent is past maxExponent, is left as it is, and a body that is not
// an object is returned as it is.
func wholeNumbers(body []byte) []byte {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || top == nil {
		return body
	}
	changed := false
	for k, v := range top {
		if n, ok := wholeNumber(v); ok {
			top[k], changed = n, true
		}
	}
	if !changed {
		return body
	}
	out, err := json.Marshal(top)
	if err != nil {
		return body
	}
	return out
}

// maxExponent bounds the exponent wholeNumber works out, so that 1e999999
// costs nothing: no int64 needs more than 19 digits.
const maxExponent = 40

// wholeNumber returns v, a JSON number with a fraction or exponent and a
// whole value, as an integer literal.
func wholeNumber(v json.RawMessage) (json.RawMessage, bool) {
	s := string(v)
	if s == "" || !strings.ContainsAny(s, ".eE") || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return nil, false
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > maxExponent || e < -maxExponent {
			return nil, false
		}
	}
	if len(s) > 2*maxExponent {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok || !r.IsInt() {
		return nil, false
	}
	return json.RawMessage(r.Num().String()), true
}
