package apicmd

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
)

// DefaultNamespace is the namespace of Argo CD's objects unless
// --namespace names another: the hub's default too.
const DefaultNamespace = "argocd"

// WriteHelp ends the long help of every write command: what --dry-run and
// the idempotency key do.
const WriteHelp = `
--dry-run has the hub check the write against what it holds and print the
events it would append; nothing is written.

Every request carries an Idempotency-Key: a new random one for each
invocation, or --idempotency-key's (a command that sends several requests
sends KEY, KEY-2, KEY-3, …). After a transport error, or a 503 from the hub
(it wrote nothing, or only part of a change to many clusters), the request
is sent again, at most twice, with the same key: the hub never writes a
key's events twice, answers a repeat with what the first request wrote,
and writes what it had not. Running the same command again
with the same --idempotency-key is just as safe, within the hub's
idempotency window (24 hours unless its --idempotency-window says else).`

// WriteFlags are the flags of every write command.
type WriteFlags struct {
	// API is --server, --context and --token.
	API Options
	// DryRun is --dry-run.
	DryRun bool
	// IdempotencyKey is --idempotency-key; empty for a random one.
	IdempotencyKey string
	// Output is -o.
	Output string

	// backoff is the wait before each resend; nil for defaultBackoff.
	backoff []time.Duration
}

// defaultBackoff is the wait before each of the two resends.
var defaultBackoff = []time.Duration{500 * time.Millisecond, 2 * time.Second}

// AddWriteFlags binds the flags of every write command to o.
func AddWriteFlags(cmd *cobra.Command, o *WriteFlags) {
	cmdkit.AddOutputFlag(cmd, &o.Output)
	AddFlags(cmd, &o.API)
	f := cmd.Flags()
	f.BoolVar(&o.DryRun, "dry-run", false, "have the hub check the write and print the events it would append; write nothing")
	f.StringVar(&o.IdempotencyKey, "idempotency-key", "", "the key that names this invocation's writes, so that running it again writes nothing twice (default: a new random key)")
}

// Check checks the flags AddWriteFlags bound; a bad one is a
// cmdkit.FlagError.
func (o *WriteFlags) Check() error {
	if err := cmdkit.CheckOutput(o.Output); err != nil {
		return err
	}
	if strings.ContainsAny(o.IdempotencyKey, " \t\r\n") {
		return &cmdkit.FlagError{Err: errors.New("--idempotency-key: want a key without white space")}
	}
	return nil
}

// Session is one invocation's calls to the hub.
type Session struct {
	// Client calls the hub.
	Client *api.Client
	o      *WriteFlags
	key    string
	writes int
}

// Session resolves the hub and the token and returns the invocation's
// session, with its idempotency key.
func (o *WriteFlags) Session() (*Session, error) {
	c, err := o.API.Client()
	if err != nil {
		return nil, err
	}
	key := o.IdempotencyKey
	if key == "" {
		key = rand.Text()
	}
	return &Session{Client: c, o: o, key: key}, nil
}

// Write sends one write, with the invocation's next idempotency key and,
// when ifMatch is not nil, the generation the object must be at. It sends
// it again, with the same key, after a transport error or a 503. Its error
// is Explain's.
func (s *Session) Write(ctx context.Context, ifMatch *int64, call func(context.Context, api.WriteOptions) (*api.Result, error)) (*api.Result, error) {
	s.writes++
	key := s.key
	if s.writes > 1 {
		key = fmt.Sprintf("%s-%d", s.key, s.writes)
	}
	wo := api.WriteOptions{DryRun: s.o.DryRun, IdempotencyKey: key, IfMatch: ifMatch}
	backoff := s.o.backoff
	if backoff == nil {
		backoff = defaultBackoff
	}
	for attempt := 0; ; attempt++ {
		res, err := call(ctx, wo)
		if err == nil {
			return res, nil
		}
		if attempt >= len(backoff) || !resendable(ctx, err) {
			if resendable(ctx, err) {
				err = &resentError{err: err, key: key, times: attempt + 1}
			}
			return nil, s.Explain(err)
		}
		select {
		case <-ctx.Done():
			return nil, s.Explain(err)
		case <-time.After(backoff[attempt]):
		}
	}
}

// Explain makes err, of a call of the session's client, into what to do.
func (s *Session) Explain(err error) error { return Explain(&s.o.API, err) }

// resendable reports whether a request may be sent again with the same
// key: it may not have reached the hub, or the hub wrote nothing.
func resendable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if api.StatusOf(err) == http.StatusServiceUnavailable {
		return true
	}
	var ue *url.Error
	var te *api.TimeoutError
	return errors.As(err, &ue) && !errors.As(err, &te) // a hub that did not answer in time will not answer the next time
}

// resentError is a write that failed however often it was sent.
type resentError struct {
	err   error
	key   string
	times int
}

func (e *resentError) Error() string {
	return fmt.Sprintf("%v\n  sent %d times with Idempotency-Key %s; running the command again with --idempotency-key %s writes nothing twice",
		e.err, e.times, e.key, e.key)
}

func (e *resentError) Unwrap() error { return e.err }

// Explain makes err, of a call of the client o.Client made, into a
// message a person can act on: a 401 or 403 says which hub refused which
// token and how to log in (Options.Explain); any other answer of the
// hub gives its message, each field it names on a line of its own, and
// the next command to run.
func Explain(o *Options, err error) error {
	var re *api.ResponseError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &re):
		return err
	case re.Status == http.StatusUnauthorized || re.Status == http.StatusForbidden:
		return o.Explain(err)
	}
	var resent *resentError
	if errors.As(err, &resent) {
		return &hubError{re: re, err: err, resent: resent}
	}
	return &hubError{re: re, err: err}
}

// SetHint replaces the hint of the hub's answer in err, when its status
// is status, with one the command knows better.
func SetHint(err error, status int, hint string) {
	var re *api.ResponseError
	if errors.As(err, &re) && re.Status == status {
		re.Body.Hint = hint
	}
}

// hubError is an error answer of the hub, as a person reads it.
type hubError struct {
	re     *api.ResponseError
	err    error
	resent *resentError
}

func (e *hubError) Error() string {
	var b strings.Builder
	verb := "refused the request"
	if e.re.Status >= 500 {
		verb = "failed"
	}
	fmt.Fprintf(&b, "the hub %s (%d %s): %s", verb, e.re.Status, http.StatusText(e.re.Status), e.re.Body.Error)
	fields := e.re.Body.Fields
	if len(fields) == 1 && e.re.Body.Error == fields[0].Field+": "+fields[0].Reason {
		fields = nil // the message says it all
	}
	for _, f := range fields {
		fmt.Fprintf(&b, "\n  %s: %s", f.Field, f.Reason)
	}
	if e.re.Body.Hint != "" {
		fmt.Fprintf(&b, "\n  next: %s", e.re.Body.Hint)
	}
	if e.resent != nil {
		fmt.Fprintf(&b, "\n  sent %d times with Idempotency-Key %s; running the command again with --idempotency-key %s writes nothing twice",
			e.resent.times, e.resent.key, e.resent.key)
	}
	return b.String()
}

func (e *hubError) Unwrap() error { return e.err }

// Merge is the results of several writes of one invocation as one: a dry
// run if any was, replayed if all were.
func Merge(rs []*api.Result) *api.Result {
	out := &api.Result{Events: []api.Written{}, Replayed: len(rs) > 0}
	for _, r := range rs {
		out.Events = append(out.Events, r.Events...)
		out.DryRun = out.DryRun || r.DryRun
		out.Replayed = out.Replayed && r.Replayed
	}
	return out
}

// ParseGeneration returns --if-generation's value as a pointer, nil when
// the flag was not given.
func ParseGeneration(cmd *cobra.Command, v int64) (*int64, error) {
	if !cmd.Flags().Changed("if-generation") {
		return nil, nil
	}
	if v < 0 {
		return nil, &cmdkit.FlagError{Err: fmt.Errorf("--if-generation %d: want a generation, a whole number ≥ 0 (0: the object must not exist yet)", v)}
	}
	return &v, nil
}

// AddGenerationFlag binds --if-generation to p.
func AddGenerationFlag(cmd *cobra.Command, p *int64, what string) {
	cmd.Flags().Int64Var(p, "if-generation", 0, "write only if "+what+" is at this generation (0: it must not exist yet); else the hub answers 409")
}
