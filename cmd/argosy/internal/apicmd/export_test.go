package apicmd

import "time"

// SetBackoff sets the waits before each resend, so that a test resends at
// once.
func (o *WriteFlags) SetBackoff(b []time.Duration) { o.backoff = b }

// Key returns the session's idempotency key.
func (s *Session) Key() string { return s.key }
