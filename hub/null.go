package hub

import (
	"bytes"
	"encoding/json"
	"net/http"
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
