package hub

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
)

// An Idempotency-Key names one request. The events a call with a key
// writes carry the key's reference and the request's digest (signed
// extension attributes, events.ExtIdempotencyKey and
// events.ExtRequestDigest), and the ledger keeps both from the log for
// the idempotency window: every replica, and a replica restarted, knows
// which request a key was first used for. A call whose key was used for
// another request, by the same actor, is a 422 and writes nothing; the
// same request again is answered with what the first wrote, as before.

// decode decodes the request's body into v as decodeBody does, and keeps
// the digest of its canonical form (compacted JSON) for the request's
// digest.
func (c *call) decode(r *http.Request, v any) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if err := decodeBytes(body, v); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, body); err != nil {
		return failf(http.StatusBadRequest, "the body is not JSON: %v", err)
	}
	sum := sha256.Sum256(buf.Bytes())
	c.body = hex.EncodeToString(sum[:])
	return nil
}

// canonicalQuery returns a request's query as the request's digest takes
// it: sorted, and without dryRun, which changes what is written, not what
// is asked; with the generation If-Match expects, which is part of what
// is asked as a body's expectedGeneration is.
func canonicalQuery(r *http.Request) string {
	q := r.URL.Query()
	q.Del("dryRun")
	if v, ok := r.Header[api.HeaderIfMatch]; ok {
		return q.Encode() + "\x00" + api.HeaderIfMatch + ":" + strings.Join(v, ",")
	}
	return q.Encode()
}

// keyRef names a call's key in the log without holding it: the key is
// the actor's, so the actor is part of it.
func keyRef(c *call) string {
	sum := sha256.Sum256([]byte(c.p.Actor + "\x00" + c.idempotencyKey))
	return hex.EncodeToString(sum[:16])
}

// requestDigest is the digest of what a call asked: its method, path,
// query and body.
func requestDigest(c *call) string {
	sum := sha256.Sum256([]byte(c.method + "\x00" + c.path + "\x00" + c.query + "\x00" + c.body))
	return hex.EncodeToString(sum[:])
}

// bindKey marks an event a call with a key writes with the key's
// reference and the request's digest.
func bindKey(c *call, e *event.Event) {
	if c.idempotencyKey == "" {
		return
	}
	e.SetExtension(events.ExtIdempotencyKey, keyRef(c))
	e.SetExtension(events.ExtRequestDigest, requestDigest(c))
}

// sameRequest refuses a call whose key the log shows used for another
// request: under the key's reference, or on one of the events the call
// would write (ids), which a replica that has not yet read the key's
// other partitions finds first.
func (s *Server) sameRequest(c *call, ids []string) error {
	if c.idempotencyKey == "" {
		return nil
	}
	digest := requestDigest(c)
	if d, ok := s.ledger.request(keyRef(c)); ok && d != digest {
		return keyReused(c)
	}
	for _, id := range ids {
		if w, ok := s.ledger.lookupID(id); ok && w.digest != "" && w.digest != digest {
			return keyReused(c)
		}
	}
	return nil
}

func keyReused(c *call) error {
	shown := c.idempotencyKey
	if len(shown) > 80 {
		shown = shown[:80] + "…"
	}
	return &apiError{status: http.StatusUnprocessableEntity, body: api.Error{
		Error: fmt.Sprintf("%s %q was used by %s for another request: a key names one request, and a retry repeats it exactly (method, path, query, If-Match and body); this one is refused",
			api.HeaderIdempotencyKey, shown, c.p.Actor),
		Fields: []api.FieldError{{Field: api.HeaderIdempotencyKey, Reason: "used for another request"}},
		Hint: "send a changed request under a new key; resend the first request exactly to learn what it wrote. " +
			"An argosy command run again with the same --idempotency-key gets this answer when its first run went through " +
			"and the request it builds changed since (it reads the object's current generation, say): look at the object instead"}}
}

// keyUse is what the ledger keeps of a key's first request.
type keyUse struct {
	digest string
	at     time.Time
}

// noteRequest records the key and request digest an event carries, if
// any. l.mu is held.
func (l *ledger) noteRequest(e *event.Event, at time.Time) string {
	ext := e.Extensions()
	ref, _ := ext[events.ExtIdempotencyKey].(string)
	digest, _ := ext[events.ExtRequestDigest].(string)
	if ref == "" || digest == "" {
		return ""
	}
	if u, ok := l.requests[ref]; !ok || l.past(u.at) { // a use past the window, not pruned yet, is forgotten
		l.requests[ref] = keyUse{digest: digest, at: at}
	}
	return digest
}

// request returns the digest of the request a key was first used for
// within the window.
func (l *ledger) request(ref string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	u, ok := l.requests[ref]
	if ok && l.past(u.at) {
		return "", false // not pruned yet
	}
	return u.digest, ok
}
