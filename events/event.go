package events

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"
)

// New builds an unsigned event of a catalogued type. key is the partition key
// (the cluster for config, status and deployment events); data is the payload
// and is encoded as JSON. The time is the current time to the second, which is
// the precision the signature covers. A type whose Spec.TypeNamesSchema
// gets no dataschema: its readers take the schema from the type, and a
// shorter id (newID).
func New(source, eventType string, subject, key string, data any) (*event.Event, error) {
	sp, ok := Lookup(eventType)
	if !ok {
		return nil, fmt.Errorf("new event: %w: %q", ErrUnknownType, eventType)
	}
	e := event.New()
	e.SetID(newID(sp))
	e.SetSource(source)
	e.SetType(eventType)
	if subject != "" {
		e.SetSubject(subject)
	}
	e.SetTime(time.Now().UTC().Truncate(time.Second))
	if !sp.TypeNamesSchema() {
		e.SetDataSchema(sp.SchemaURL())
	}
	if key != "" {
		e.SetExtension(ExtPartitionKey, key)
	}
	if err := e.SetData(event.ApplicationJSON, data); err != nil {
		return nil, fmt.Errorf("new event %s: encode data: %w", eventType, err)
	}
	return &e, nil
}

// newID returns a new event id: a UUID, or for the types written most,
// whose Spec.TypeNamesSchema, the same 128 random bits in 22 characters of
// unpadded base64url, 14 bytes less on every status record.
func newID(sp Spec) string {
	if !sp.TypeNamesSchema() {
		return uuid.NewString()
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
