package events

import (
	"errors"
)

// Reasons a record is refused. Each is a sentinel that a *DecodeError wraps,
// so callers test with errors.Is; Reason returns the short code written to the
// dead-letter topic.
var (
	ErrMalformed          = errors.New("malformed")
	ErrOversized          = errors.New("oversized")
	ErrUnknownType        = errors.New("unknown_type")
	ErrSchema             = errors.New("schema")
	ErrUnsigned           = errors.New("unsigned")
	ErrBadSignature       = errors.New("bad_signature")
	ErrUnknownKey         = errors.New("unknown_key")
	ErrRevokedKey         = errors.New("revoked_key")
	ErrNoSignatures       = errors.New("no_signatures")
	ErrDuplicateSignature = errors.New("duplicate_signature")
	ErrNotAuthorized      = errors.New("not_authorized")
	ErrWrongTarget        = errors.New("wrong_target")
	ErrWrongTopic         = errors.New("wrong_topic")
	ErrTimestamp          = errors.New("timestamp")
	ErrStale              = errors.New("stale")
)

// ErrKeysBehind means the key registry has not yet seen the trust events up
// to a record's log time, so the record cannot be judged yet. It is not a
// DecodeError: the reader retries the record instead of dead-lettering it,
// so a live reader and a rebuild from the log decide alike.
var ErrKeysBehind = errors.New("key registry is behind the record")

var reasons = []error{
	ErrMalformed, ErrOversized, ErrUnknownType, ErrSchema, ErrUnsigned, ErrBadSignature,
	ErrUnknownKey, ErrRevokedKey, ErrNoSignatures, ErrDuplicateSignature, ErrNotAuthorized, ErrWrongTarget,
	ErrWrongTopic, ErrTimestamp, ErrStale,
}

// Reasons returns every decode reason code.
func Reasons() []string {
	out := make([]string, len(reasons))
	for i, r := range reasons {
		out[i] = r.Error()
	}
	return out
}

// DecodeError says why a record is not an acceptable event. Kind is one of
// the Err* sentinels; Err, if set, gives the detail.
type DecodeError struct {
	Kind error
	Err  error
}

func (e *DecodeError) Error() string {
	if e.Err == nil {
		return "event rejected: " + e.Kind.Error()
	}
	return "event rejected: " + e.Kind.Error() + ": " + e.Err.Error()
}

// Unwrap returns the kind and the detail.
func (e *DecodeError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

func reject(kind, err error) *DecodeError { return &DecodeError{Kind: kind, Err: err} }

// Reason returns the short reason code of err: one of the Err* codes
// ("unsigned", "schema", …), "handler" for an error wrapped with Poison, or
// "error".
func Reason(err error) string {
	for _, r := range reasons {
		if errors.Is(err, r) {
			return r.Error()
		}
	}
	var p *poisonError
	if errors.As(err, &p) {
		return "handler"
	}
	return "error"
}

// Poison marks a handler error as permanent for this record: Reader
// dead-letters the record with the error and moves on.
func Poison(err error) error { return &poisonError{err} }

// Fatal marks a handler error as fatal: Reader stops and returns it without
// committing the record.
func Fatal(err error) error { return &fatalError{err} }

type poisonError struct{ err error }

func (e *poisonError) Error() string { return "poison: " + e.err.Error() }
func (e *poisonError) Unwrap() error { return e.err }

type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

// IsPoison reports whether err marks its record as permanently bad: a decode
// error or an error wrapped with Poison.
func IsPoison(err error) bool {
	var p *poisonError
	var d *DecodeError
	return errors.As(err, &p) || errors.As(err, &d)
}

// IsFatal reports whether err was wrapped with Fatal.
func IsFatal(err error) bool {
	var f *fatalError
	return errors.As(err, &f)
}
